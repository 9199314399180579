package webhook

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

// parseURL applies the checks that need no network and returns why raw is
// refused, or "". Send repeats them: userinfo in particular would make the
// HTTP client send an Authorization header.
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
	for _, addr := range addrs {
		if err := p.AllowedAddr(addr); err != nil {
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

// addrRule names a category of addresses receivers may not have.
type addrRule struct {
	category string
	matches  func(netip.Addr) bool
}

// addrRules are tried in order and the first match names the category, so
// specific ranges come before the ones that contain them (the metadata
// addresses before link-local and unique local).
var addrRules = []addrRule{
	{"an unspecified address", netip.Addr.IsUnspecified},
	{"a loopback address", netip.Addr.IsLoopback},
	{"the cloud metadata address", inPrefixes("169.254.169.254/32", "fd00:ec2::254/128")},
	{"a unique local address", inPrefixes("fc00::/7")},
	{"a private address", netip.Addr.IsPrivate},
	{"a link-local address", netip.Addr.IsLinkLocalUnicast},
	{"a multicast address", netip.Addr.IsMulticast},
	{"a carrier-grade NAT address", inPrefixes("100.64.0.0/10")},
	{"the broadcast address", inPrefixes("255.255.255.255/32")},
	{"a reserved address", inPrefixes("0.0.0.0/8", "240.0.0.0/4", "192.0.0.0/24")},
	{"a benchmarking address", inPrefixes("198.18.0.0/15")},
	{"a documentation address", inPrefixes("2001:db8::/32")},
	{"a discard-only address", inPrefixes("100::/64")},
}

// nat64 is the well-known NAT64 prefix: the last four bytes are an IPv4
// address that the network's translator connects to.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

func inPrefixes(cidrs ...string) func(netip.Addr) bool {
	prefixes := make([]netip.Prefix, len(cidrs))
	for i, c := range cidrs {
		prefixes[i] = netip.MustParsePrefix(c)
	}
	return func(ip netip.Addr) bool {
		for _, p := range prefixes {
			if p.Contains(ip) {
				return true
			}
		}
		return false
	}
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
	for _, rule := range addrRules {
		if rule.matches(ip) {
			return errors.New(rule.category)
		}
	}
	if nat64.Contains(ip) {
		return p.allowedNAT64(ip)
	}
	return nil
}

func (p URLPolicy) allowedNAT64(ip netip.Addr) error {
	b := ip.As16()
	embedded := netip.AddrFrom4([4]byte(b[12:]))
	if err := p.AllowedAddr(embedded); err != nil {
		return fmt.Errorf("a NAT64 address for %s, %w", embedded, err)
	}
	return nil
}
