package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestParseTrustedHosts(t *testing.T) {
	got, err := ParseTrustedHosts(" 10.96.12.34/32, Whisper.Speech.svc.cluster.local., 10.100.0.0/16,fd00:5::/64 ,vllm ,")
	if err != nil || got.String() != "10.96.12.34/32,10.100.0.0/16,fd00:5::/64,whisper.speech.svc.cluster.local,vllm" {
		t.Errorf("got %v, %v", got, err)
	}
	if none, err := ParseTrustedHosts(""); err != nil || none.String() != "" {
		t.Errorf("empty: %v, %v; want none", none, err)
	}
	for in, want := range map[string]string{
		"10.96.12.34":         "list it as a network (10.96.12.34/32)",
		"10.96.12.34/16":      "did you mean 10.96.0.0/16",
		"10.96.12.0/33":       "not a network in CIDR notation",
		"127.0.0.0/8":         "never trusted",
		"169.254.169.254/32":  "never trusted", // the cloud's metadata service
		"0.0.0.0/0":           "never trusted",
		"::/0":                "never trusted",
		"fe80::/64":           "never trusted",
		"localhost":           "neither a network",
		"*.svc.cluster.local": "neither a network",
		"https://whisper":     "is a URL",
		"127.1":               "neither a network",
	} {
		if _, err := ParseTrustedHosts(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", in, err, want)
		}
	}
}

// resolver answers every name with fixed addresses.
type resolver []netip.Addr

func (r resolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) { return r, nil }

// Trusted hosts open exactly their private addresses to the policy that
// carries them, when a URL is checked: an address in a trusted network, a
// trusted name whatever private address it resolves to (never loopback or
// metadata); other private addresses and names stay refused, as do all of
// them for a policy without them (the webhooks').
func TestTrustedHostsCheck(t *testing.T) {
	trusted, err := ParseTrustedHosts("10.96.12.34/32,fd00:5::/64,whisper.speech.svc.cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	private := resolver{netip.MustParseAddr("10.96.200.7")}
	ctx := context.Background()
	for _, tc := range []struct {
		url           string
		resolves      resolver
		models, hooks bool // allowed
	}{
		{"https://10.96.12.34/v1", nil, true, false},
		{"https://[::ffff:10.96.12.34]/v1", nil, true, false},
		{"https://[fd00:5::7]:8443/v1", nil, true, false},
		{"https://10.96.12.35/v1", nil, false, false},
		{"https://10.96.0.1/", nil, false, false}, // the apiserver's Service, say
		{"https://127.0.0.1/", nil, false, false},
		{"https://8.8.8.8/", nil, true, true},
		{"https://whisper.speech.svc.cluster.local/v1", private, true, false},
		{"https://WHISPER.speech.svc.cluster.local./v1", private, true, false},
		{"https://kubernetes.default.svc/", private, false, false},
		{"https://whisper.speech.svc.cluster.local/v1", resolver{netip.MustParseAddr("169.254.169.254")}, false, false},
		{"https://whisper.speech.svc.cluster.local/v1", resolver{netip.MustParseAddr("127.0.0.1")}, false, false},
	} {
		models, hooks := URLPolicy{Trusted: trusted, Resolver: tc.resolves}, URLPolicy{Resolver: tc.resolves}
		var ue *URLError
		if err := models.Check(ctx, tc.url); (err == nil) != tc.models || err != nil && !errors.As(err, &ue) {
			t.Errorf("model policy, %s resolving to %v: %v, want allowed %v", tc.url, tc.resolves, err, tc.models)
		}
		if err := hooks.Check(ctx, tc.url); (err == nil) != tc.hooks {
			t.Errorf("webhook policy, %s: %v, want allowed %v", tc.url, err, tc.hooks)
		}
	}
}

// The guard on the address dialed (after DNS) lets a connection into a
// trusted network through and refuses it without, and one to a trusted
// name's host through to a private address but never to loopback: real
// TCP connections to listeners on this machine.
func TestTrustedHostsDial(t *testing.T) {
	addr := refusedLocalAddr(t)
	private := listen(t, addr)
	loopback := listen(t, netip.MustParseAddr("127.0.0.1"))
	_, port, _ := net.SplitHostPort(loopback)
	for _, tc := range []struct {
		name, address string
		trusted       TrustedHosts
		ok            bool
	}{
		{"trusted network", private, TrustedHosts{Networks: []netip.Prefix{netip.PrefixFrom(addr, addr.BitLen())}}, true},
		{"untrusted", private, TrustedHosts{}, false},
		// The names as the dialer is given them: the host of the URL, which
		// here is the address itself (no name of this machine resolves to it).
		{"trusted name", private, TrustedHosts{Names: []string{addr.String()}}, true},
		{"trusted name resolving to loopback", net.JoinHostPort("localhost", port), TrustedHosts{Names: []string{"localhost"}}, false},
	} {
		dial := URLPolicy{Trusted: tc.trusted}.DialContext(&net.Dialer{})
		c, err := dial(context.Background(), "tcp", tc.address)
		if c != nil {
			_ = c.Close()
		}
		var refused *RefusedAddrError
		if tc.ok && err != nil || !tc.ok && !errors.As(err, &refused) {
			t.Errorf("%s: dialing %s: %v, want connected %v", tc.name, tc.address, err, tc.ok)
		}
	}
}

// listen accepts (and closes) connections on addr until the test ends; it
// returns the listener's address.
func listen(t *testing.T, addr netip.Addr) string {
	ln, err := net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return ln.Addr().String()
}

// refusedLocalAddr is an address of this machine, not loopback, that the
// guard refuses (a private, shared or documentation address).
func refusedLocalAddr(t *testing.T) netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil || p.Addr().IsLoopback() || p.Addr().IsLinkLocalUnicast() {
			continue
		}
		if (URLPolicy{}).AllowedAddr(p.Addr()) != nil {
			return p.Addr()
		}
	}
	t.Skip("this machine has no address the guard refuses other than loopback and link-local: nothing to dial")
	return netip.Addr{}
}
