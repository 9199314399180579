package authlimit

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Client is the client r's failures count against: the connection's
// address or, when that is a trusted proxy, the address the proxies
// forwarded. An IPv6 address counts as its /64.
func (l *Limiter) Client(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	return block(l.forwarded(peer.Unmap(), r.Header))
}

// forwarded walks the forwarding chain from the peer back towards the
// client, through trusted proxies only: the first hop that is not one is
// the client. Hops a client wrote itself (left of it) are never read, and
// a chain that cannot be read stops at the last proxy that was trusted.
func (l *Limiter) forwarded(peer netip.Addr, h http.Header) netip.Addr {
	client := peer
	hops := forwardedFor(h)
	for i := len(hops) - 1; i >= 0 && l.trusts(client); i-- {
		hop, ok := parseHop(hops[i])
		if !ok {
			break
		}
		client = hop
	}
	return client
}

func (l *Limiter) trusts(a netip.Addr) bool {
	for _, p := range l.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedFor is the chain of client addresses in X-Forwarded-For, or,
// when there is none, in Forwarded's for= parameters (RFC 7239), nearest
// the client first.
func forwardedFor(h http.Header) []string {
	var hops []string
	for _, v := range h.Values("X-Forwarded-For") {
		for _, hop := range strings.Split(v, ",") {
			hops = append(hops, strings.TrimSpace(hop))
		}
	}
	if len(hops) > 0 {
		return hops
	}
	for _, v := range h.Values("Forwarded") {
		for _, element := range strings.Split(v, ",") {
			for _, pair := range strings.Split(element, ";") {
				name, value, _ := strings.Cut(strings.TrimSpace(pair), "=")
				if strings.EqualFold(name, "for") {
					hops = append(hops, strings.Trim(value, `"`))
				}
			}
		}
	}
	return hops
}

// parseHop reads one forwarded address: 203.0.113.7, 203.0.113.7:4711,
// [2001:db8::1] or [2001:db8::1]:4711.
func parseHop(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return a.Unmap(), true
	}
	return netip.Addr{}, false
}

// block is a's budget's name: a itself, or its /64 for IPv6.
func block(a netip.Addr) string {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
