package webhook

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestParseTrustedNetworks(t *testing.T) {
	got, err := ParseTrustedNetworks(" 10.96.12.34/32, 10.100.0.0/16,fd00:5::/64 ,")
	if err != nil || got.String() != "10.96.12.34/32,10.100.0.0/16,fd00:5::/64" {
		t.Errorf("got %v, %v", got, err)
	}
	if none, err := ParseTrustedNetworks(""); err != nil || len(none) != 0 {
		t.Errorf("empty: %v, %v; want none", none, err)
	}
	for in, want := range map[string]string{
		"10.96.12.34":        "not a network in CIDR notation",
		"whisper.speech.svc": "not a network in CIDR notation",
		"10.96.12.34/16":     "did you mean 10.96.0.0/16",
		"127.0.0.0/8":        "never trusted",
		"169.254.169.254/32": "never trusted", // the cloud's metadata service
		"0.0.0.0/0":          "never trusted",
		"::/0":               "never trusted",
		"fe80::/64":          "never trusted",
	} {
		if _, err := ParseTrustedNetworks(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", in, err, want)
		}
	}
}

// A trusted network opens exactly its private addresses to the policy
// that carries it, when a URL is checked: the others stay refused, as do
// all of them for a policy without it (the webhooks').
func TestTrustedNetworksCheck(t *testing.T) {
	trusted, err := ParseTrustedNetworks("10.96.12.34/32,fd00:5::/64")
	if err != nil {
		t.Fatal(err)
	}
	models, hooks := URLPolicy{Trusted: trusted}, URLPolicy{}
	ctx := context.Background()
	for _, tc := range []struct {
		url           string
		models, hooks bool // allowed
	}{
		{"https://10.96.12.34/v1", true, false},
		{"https://[::ffff:10.96.12.34]/v1", true, false},
		{"https://[fd00:5::7]:8443/v1", true, false},
		{"https://10.96.12.35/v1", false, false},
		{"https://10.96.0.1/", false, false}, // the apiserver's Service, say
		{"https://127.0.0.1/", false, false},
		{"https://8.8.8.8/", true, true},
	} {
		var ue *URLError
		if err := models.Check(ctx, tc.url); (err == nil) != tc.models || err != nil && !errors.As(err, &ue) {
			t.Errorf("model policy, %s: %v, want allowed %v", tc.url, err, tc.models)
		}
		if err := hooks.Check(ctx, tc.url); (err == nil) != tc.hooks {
			t.Errorf("webhook policy, %s: %v, want allowed %v", tc.url, err, tc.hooks)
		}
	}
}

// The guard on the address dialed (after DNS) lets a connection into a
// trusted network through, and refuses it without: a real TCP connection
// to a listener on one of this machine's own addresses that the guard
// refuses (not loopback, which is never trusted).
func TestTrustedNetworksDial(t *testing.T) {
	addr := refusedLocalAddr(t)
	ln, err := net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	trusted := TrustedNetworks{netip.PrefixFrom(addr, addr.BitLen())}
	for _, tc := range []struct {
		name   string
		policy URLPolicy
		ok     bool
	}{{"trusted", URLPolicy{Trusted: trusted}, true}, {"untrusted", URLPolicy{}, false}} {
		d := net.Dialer{Control: tc.policy.DialControl()}
		c, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
		if c != nil {
			_ = c.Close()
		}
		var refused *refusedAddrError
		if tc.ok && err != nil || !tc.ok && !errors.As(err, &refused) {
			t.Errorf("%s: dialing %s: %v, want connected %v", tc.name, ln.Addr(), err, tc.ok)
		}
	}
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
