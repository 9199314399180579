package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// URLPolicy decides which receiver URLs and addresses Switchboard may
// connect to. Without it a customer could point a webhook at the cluster's
// own services or the cloud metadata endpoint and read the answers in the
// delivery log (server-side request forgery).
type URLPolicy struct {
	// AllowInsecure permits http:// and loopback/private addresses (local
	// development only).
	AllowInsecure bool
	// Trusted are private hosts this policy allows all the same: the
	// platform team's own in-cluster model servers (TrustedHosts). Only
	// the speech and language-model clients' policies carry them, never
	// the webhooks'; their clients dial through DialContext.
	Trusted TrustedHosts
	// Resolver resolves host names in Check; nil means net.DefaultResolver.
	// The Sender always dials with the system resolver and checks the
	// address it actually connects to.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
}

// URLError is a refused receiver URL. Reason is one sentence fit for an API
// response.
type URLError struct {
	URL    string // as given, with any password redacted
	Reason string
}

func (e *URLError) Error() string {
	return "webhook URL " + e.URL + ": " + e.Reason
}

const reachableHint = "receivers must be publicly reachable"

// Check validates a receiver URL when an endpoint is saved: an absolute
// https URL (http too with AllowInsecure) with a host, without credentials
// or fragment, whose host resolves only to public addresses (any address
// with AllowInsecure). An IP-literal host is checked without resolving.
// Refusals are *URLError; only a canceled ctx gives another error, as that
// is no fault of the URL.
func (p URLPolicy) Check(ctx context.Context, raw string) error {
	u, reason := p.parseURL(raw)
	if reason == "" {
		reason = p.checkHost(ctx, u.Hostname())
		if err := ctx.Err(); reason != "" && err != nil {
			return fmt.Errorf("webhook: check URL: %w", err)
		}
	}
	if reason == "" {
		return nil
	}
	return &URLError{URL: redacted(raw, u), Reason: reason}
}

// Refusal applies the checks of Check that need no network and returns why
// raw is refused, or "". The webhook sender repeats them before each send: userinfo in particular would make the
// HTTP client send an Authorization header.
func (p URLPolicy) Refusal(raw string) string {
	_, reason := p.parseURL(raw)
	return reason
}

func (p URLPolicy) parseURL(raw string) (*url.URL, string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, "this is not a valid URL"
	case !u.IsAbs():
		return u, "webhook URLs must be absolute, like https://example.com/webhooks"
	case !p.schemeAllowed(u.Scheme):
		return u, p.schemeReason()
	case u.Hostname() == "":
		return u, "webhook URLs must include a host"
	case u.User != nil:
		return u, "webhook URLs must not contain credentials; every request is signed instead"
	case strings.Contains(raw, "#"):
		return u, "webhook URLs must not contain a fragment (#...)"
	case !validPort(u.Port()):
		return u, "the port must be a number from 1 to 65535"
	}
	return u, ""
}

// schemeAllowed is https only, as plain http would let anyone on the path
// read call data and replay signed requests.
func (p URLPolicy) schemeAllowed(scheme string) bool {
	return scheme == "https" || (p.AllowInsecure && scheme == "http")
}

func (p URLPolicy) schemeReason() string {
	if p.AllowInsecure {
		return "webhook URLs must use http or https"
	}
	return "webhook URLs must use https"
}

func validPort(port string) bool {
	if port == "" {
		return true
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}

// checkHost returns why host is refused, or "".
func (p URLPolicy) checkHost(ctx context.Context, host string) string {
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := p.AllowedAddr(ip); err != nil {
			return fmt.Sprintf("%s is %v; %s", host, err, reachableHint)
		}
		return ""
	}
	if numericHost(host) {
		return fmt.Sprintf("%s is not a valid IP address", host)
	}
	addrs, err := p.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return fmt.Sprintf("%s does not resolve to an address; %s", host, reachableHint)
	}
	allowed := p.AllowedAddr
	if p.Trusted.Named(host) && !p.AllowInsecure {
		allowed = allowedForName
	}
	for _, addr := range addrs {
		if err := allowed(addr); err != nil {
			return fmt.Sprintf("%s resolves to %s, %v; %s", host, addr.Unmap(), err, reachableHint)
		}
	}
	return ""
}

func (p URLPolicy) resolver() interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
} {
	if p.Resolver == nil {
		return net.DefaultResolver
	}
	return p.Resolver
}

// numericHost reports a host whose last label is a number, like 127.1 or
// 2130706433: not a valid IP for netip, but C resolvers read such hosts as
// addresses, and no real top-level domain is numeric.
func numericHost(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := strings.ToLower(host[strings.LastIndexByte(host, '.')+1:])
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		_, err := strconv.ParseUint(hex, 16, 64)
		return err == nil || hex == ""
	}
	_, err := strconv.ParseUint(last, 10, 64)
	return err == nil
}

func redacted(raw string, u *url.URL) string {
	if u == nil {
		return raw
	}
	return u.Redacted()
}

// AllowedAddr returns why ip may not be connected to, or nil if it is
// public. The error's text is the category ("a loopback address"), to be
// composed into a sentence. With AllowInsecure every address is allowed.
func (p URLPolicy) AllowedAddr(ip netip.Addr) error {
	if p.AllowInsecure {
		return nil
	}
	// ::ffff:127.0.0.1 is 127.0.0.1 on the wire; a zone would hide the
	// address from prefix checks.
	ip = ip.WithZone("").Unmap()
	if !ip.IsValid() {
		return errors.New("an invalid address")
	}
	err := refusal(ip)
	if err != nil && p.Trusted.Contains(ip) {
		return nil
	}
	return err
}
