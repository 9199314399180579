package egress

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// GuardedTransport is an HTTP transport that dials only addresses policy
// allows, checked after DNS, with no proxy: for other outbound calls to
// URLs an organization configures (a language model's endpoint, say).
func GuardedTransport(policy URLPolicy) *http.Transport {
	return Transport(policy, nil)
}

// Transport is GuardedTransport with TLS settings based on base (nil: system
// roots); TLS 1.2 is the least it accepts. The webhook sender uses it.
func Transport(policy URLPolicy, base *tls.Config) *http.Transport {
	dialer := &net.Dialer{KeepAlive: 30 * time.Second}
	return &http.Transport{
		// No proxy, whatever the environment says: a proxy would connect on
		// our behalf, past the address guard.
		Proxy:               nil,
		DialContext:         policy.DialContext(dialer),
		TLSClientConfig:     tlsConfig(base),
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
}

func tlsConfig(base *tls.Config) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if base != nil {
		cfg = base.Clone()
		cfg.MinVersion = max(cfg.MinVersion, tls.VersionTLS12)
	}
	return cfg
}

// RefusedAddrError is a connection the address guard stopped; its message
// names the address and the reason, fit for a delivery log.
type RefusedAddrError struct {
	addr   string
	reason string
}

func (e *RefusedAddrError) Error() string {
	return "refused to connect to " + e.addr + ": " + e.reason
}

// DialControl is the address guard for another client that connects where
// an organization says (a bot's media stream, a speech recognition server):
// a net.Dialer's Control, refusing what AllowedAddr refuses, as webhook
// deliveries do.
func (p URLPolicy) DialControl() func(network, address string, c syscall.RawConn) error {
	return addressGuard(p)
}

// addressGuard checks the address actually being dialed, after DNS. Check
// ran when the URL was saved, but the name may resolve elsewhere now (DNS
// rebinding), so this is the check that protects the network.
func addressGuard(p URLPolicy) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &RefusedAddrError{addr: address, reason: "not an IP address"}
		}
		if err := p.AllowedAddr(ap.Addr()); err != nil {
			return &RefusedAddrError{addr: ap.Addr().Unmap().String(), reason: err.Error()}
		}
		return nil
	}
}
