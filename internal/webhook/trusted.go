package webhook

import (
	"fmt"
	"net/netip"
	"strings"
)

// TrustedNetworks are private networks (CIDRs) that the platform team
// trusts for the servers an organization's agent may name for speech
// recognition and analysis: an in-cluster Whisper or vLLM Service, which
// the URL guard would otherwise refuse as private. It is the operator's
// setting, never an organization's: a tenant who could widen it would
// point its agent at the apiserver or another tenant's service. It is a
// list of networks rather than host names because the guard checks the
// address actually dialed (a name may resolve elsewhere by the time it is
// dialed); a Service is listed by its ClusterIP (a /32) or the range its
// model servers run in. Loopback, link-local (cloud metadata endpoints),
// unspecified and multicast addresses can never be trusted.
type TrustedNetworks []netip.Prefix

// neverTrusted are the networks no model server is in, and which reach
// the node itself or the cloud's metadata service.
var neverTrusted = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("224.0.0.0/4"), netip.MustParsePrefix("::/128"), netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("fe80::/10"), netip.MustParsePrefix("ff00::/8"),
}

// ParseTrustedNetworks reads a comma-separated list of CIDRs ("" is none).
func ParseTrustedNetworks(s string) (TrustedNetworks, error) {
	var out TrustedNetworks
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a network in CIDR notation (10.96.12.34/32, 10.100.0.0/16)", f)
		}
		if p != p.Masked() {
			return nil, fmt.Errorf("%q has host bits set: did you mean %s?", f, p.Masked())
		}
		for _, n := range neverTrusted {
			if n.Overlaps(p) {
				return nil, fmt.Errorf("%s overlaps %s (loopback, link-local and metadata, unspecified or multicast addresses), which is never trusted", p, n)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// Contains reports whether ip is in one of the networks.
func (t TrustedNetworks) Contains(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	for _, p := range t {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// String lists the networks as ParseTrustedNetworks reads them.
func (t TrustedNetworks) String() string {
	s := make([]string, len(t))
	for i, p := range t {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}
