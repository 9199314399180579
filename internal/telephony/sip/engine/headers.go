package engine

import (
	"fmt"
	"regexp"
	"strings"

	sipmsg "github.com/emiago/sipgo/sip"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// sipHeaderName is what a custom header's name may be.
var sipHeaderName = regexp.MustCompile(switchboardv1.SIPHeaderNamePattern)

// customHeaders are hs as SIP headers, in their order, for the INVITE,
// a REFER and a transfer's second call.
func customHeaders(hs []Header) []sipmsg.Header {
	out := make([]sipmsg.Header, 0, len(hs))
	for _, h := range hs {
		out = append(out, sipmsg.NewHeader(h.Name, h.Value))
	}
	return out
}

// validateHeaders reports the headers that break the API's rules. They
// were validated before (the CRD, the REST API); checking again here keeps
// a line break, which would forge headers of its own, off the wire.
func validateHeaders(hs []Header) []error {
	var errs []error
	// The agent's and the call's, each bounded.
	if maxCount := 2 * switchboardv1.SIPHeadersMaxCount; len(hs) > maxCount {
		errs = append(errs, fmt.Errorf("%d custom SIP headers: at most %d", len(hs), maxCount))
	}
	for _, h := range hs {
		switch {
		case !sipHeaderName.MatchString(h.Name):
			errs = append(errs, fmt.Errorf("custom SIP header %q: want X- and up to 62 letters, digits and hyphens", h.Name))
		case strings.HasPrefix(strings.ToLower(h.Name), switchboardv1.SIPHeaderReservedPrefix):
			errs = append(errs, fmt.Errorf("custom SIP header %q: X-Switchboard-* is reserved", h.Name))
		case len(h.Value) > switchboardv1.SIPHeaderValueMaxLength || !printable(h.Value):
			errs = append(errs, fmt.Errorf("custom SIP header %s: want printable ASCII, up to %d characters",
				h.Name, switchboardv1.SIPHeaderValueMaxLength))
		}
	}
	return errs
}

// printable reports whether s is printable ASCII (space to tilde).
func printable(s string) bool {
	for i := range len(s) {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
