package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

// TrustedHosts are the private hosts the platform team trusts for the
// servers an organization's agent may name for speech recognition and
// analysis: an in-cluster Whisper or vLLM Service, which the URL guard
// would otherwise refuse as private. It is the operator's setting, never
// an organization's: a tenant who could widen it would point its agent at
// the apiserver or another tenant's service.
//
// A network (CIDR) opens its addresses to any URL. A host name opens
// private addresses to URLs with exactly that host: the name is checked
// when the URL is and again at every connection (before DNS), and what it
// resolves to is the cluster DNS's answer, which the platform controls.
// Loopback, link-local (cloud metadata endpoints), unspecified and
// multicast addresses are never trusted, whatever a name resolves to.
type TrustedHosts struct {
	Networks []netip.Prefix
	// Names are lowercase, without a trailing dot.
	Names []string
}

// neverTrusted are the networks no model server is in, and which reach
// the node itself or the cloud's metadata service.
var neverTrusted = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("224.0.0.0/4"), netip.MustParsePrefix("255.255.255.255/32"), netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("fe80::/10"), netip.MustParsePrefix("ff00::/8"),
}

// hostName is a DNS name of letters, digits and hyphens.
var hostName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)

// ParseTrustedHosts reads a comma-separated list of networks in CIDR
// notation and host names ("" is none).
func ParseTrustedHosts(s string) (TrustedHosts, error) {
	var t TrustedHosts
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			if err := trustable(p); err != nil {
				return TrustedHosts{}, err
			}
			t.Networks = append(t.Networks, p)
			continue
		}
		name := strings.TrimSuffix(strings.ToLower(f), ".")
		switch {
		case strings.Contains(f, "://"):
			return TrustedHosts{}, fmt.Errorf("%q is a URL: list its host name", f)
		case strings.Contains(f, "/"):
			return TrustedHosts{}, fmt.Errorf("%q is not a network in CIDR notation (10.96.12.34/32, 10.100.0.0/16)", f)
		case isAddr(name):
			return TrustedHosts{}, fmt.Errorf("%q is an address: list it as a network (%s/32)", f, name)
		case !hostName.MatchString(name) || numericHost(name) || name == "localhost" || strings.HasSuffix(name, ".localhost"):
			return TrustedHosts{}, fmt.Errorf("%q is neither a network in CIDR notation nor a host name (whisper.speech.svc.cluster.local)", f)
		}
		t.Names = append(t.Names, name)
	}
	return t, nil
}

func isAddr(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// trustable refuses a network with host bits set or one that overlaps
// what is never trusted.
func trustable(p netip.Prefix) error {
	if p != p.Masked() {
		return fmt.Errorf("%q has host bits set: did you mean %s?", p, p.Masked())
	}
	for _, n := range neverTrusted {
		if n.Overlaps(p) {
			return fmt.Errorf("%s overlaps %s (loopback, link-local and metadata, unspecified, broadcast or multicast addresses), which is never trusted", p, n)
		}
	}
	return nil
}

// Contains reports whether ip is in one of the networks.
func (t TrustedHosts) Contains(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	return slices.ContainsFunc(t.Networks, func(p netip.Prefix) bool { return p.Contains(ip) })
}

// Named reports whether host is one of the names.
func (t TrustedHosts) Named(host string) bool {
	return slices.Contains(t.Names, strings.TrimSuffix(strings.ToLower(host), "."))
}

// String lists the networks and names as ParseTrustedHosts reads them.
func (t TrustedHosts) String() string {
	var s []string
	for _, p := range t.Networks {
		s = append(s, p.String())
	}
	return strings.Join(append(s, t.Names...), ",")
}

// allowedForName returns why ip may not be connected to for a trusted
// name, or nil: any address but those never trusted.
func allowedForName(ip netip.Addr) error {
	ip = ip.WithZone("").Unmap()
	for _, n := range neverTrusted {
		if n.Contains(ip) {
			return fmt.Errorf("%s, which is never trusted", refusal(ip))
		}
	}
	return nil
}

// DialContext dials as base does, through the address guard: the policy's
// guard, or for a trusted name's host (address is the host and port, as
// an http.Transport or WebSocket dial gives it, before DNS) the guard of
// allowedForName.
func (p URLPolicy) DialContext(base *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	named := *base
	named.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &RefusedAddrError{addr: address, reason: "not an IP address"}
		}
		if err := allowedForName(ap.Addr()); err != nil && !p.AllowInsecure {
			return &RefusedAddrError{addr: ap.Addr().Unmap().String(), reason: err.Error()}
		}
		return nil
	}
	guarded := *base
	guarded.Control = addressGuard(p)
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if host, _, err := net.SplitHostPort(address); err == nil && p.Trusted.Named(host) {
			return named.DialContext(ctx, network, address)
		}
		return guarded.DialContext(ctx, network, address)
	}
}
