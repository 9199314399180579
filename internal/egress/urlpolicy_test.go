package egress_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/egress"
)

// fakeResolver answers from a map, so Check tests need no network.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ips, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	addrs := make([]netip.Addr, len(ips))
	for i, ip := range ips {
		addrs[i] = netip.MustParseAddr(ip)
	}
	return addrs, nil
}

var testResolver = fakeResolver{
	"hooks.example.com": {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"},
	"localhost":         {"127.0.0.1", "::1"},
	"mixed.example.com": {"93.184.216.34", "10.1.2.3", "2606:2800:220:1::1"},
	"nat64.example.com": {"64:ff9b::a9fe:a9fe"},
	"mapped.example":    {"::ffff:192.168.0.10"},
	"sixtofour.example": {"2002:a9fe:a9fe::1"},
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		url        string
		wantReason string // "" means allowed
	}{
		{"https://93.184.216.34/hook", ""},
		{"https://hooks.example.com/hook?x=1", ""},
		{"https://hooks.example.com:8443/hook", ""},
		{"https://[2606:2800:220:1:248:1893:25c8:1946]/hook", ""},
		{"http://hooks.example.com/hook", "webhook URLs must use https"},
		{"ftp://hooks.example.com/hook", "webhook URLs must use https"},
		{"HTTP://hooks.example.com/hook", "webhook URLs must use https"},
		{"//hooks.example.com/hook", "webhook URLs must be absolute"},
		{"/hook", "webhook URLs must be absolute"},
		{"https:///hook", "webhook URLs must include a host"},
		{"https://:443/hook", "webhook URLs must include a host"},
		{"https://user:hunter2@hooks.example.com/hook", "must not contain credentials"},
		{"https://token@hooks.example.com/hook", "must not contain credentials"},
		{"https://hooks.example.com/hook#frag", "must not contain a fragment"},
		{"https://hooks.example.com/hook#", "must not contain a fragment"},
		{"https://hooks.example.com:0/hook", "port"},
		{"https://hooks.example.com:70000/hook", "port"},
		{"https://hooks.example.com/%zz", "not a valid URL"},
		{"https://localhost/hook", "localhost resolves to 127.0.0.1, a loopback address; receivers must be publicly reachable"},
		{"https://127.0.0.1/hook", "127.0.0.1 is a loopback address; receivers must be publicly reachable"},
		{"https://[::1]/hook", "::1 is a loopback address"},
		{"https://10.0.0.1/hook", "10.0.0.1 is a private address"},
		{"https://172.16.5.4/hook", "172.16.5.4 is a private address"},
		{"https://192.168.1.1/hook", "192.168.1.1 is a private address"},
		{"https://169.254.169.254/latest/meta-data", "169.254.169.254 is the cloud metadata address"},
		{"https://169.254.1.1/hook", "169.254.1.1 is a link-local address"},
		{"https://100.64.0.1/hook", "100.64.0.1 is a carrier-grade NAT address"},
		{"https://224.0.0.1/hook", "224.0.0.1 is a multicast address"},
		{"https://0.0.0.0/hook", "0.0.0.0 is an unspecified address"},
		{"https://[fd00:ec2::254]/hook", "fd00:ec2::254 is the cloud metadata address"},
		{"https://[fc00::1]/hook", "fc00::1 is a unique local address"},
		{"https://[fe80::1]/hook", "fe80::1 is a link-local address"},
		{"https://[fe80::1%25eth0]/hook", "link-local address"},
		{"https://[::ffff:127.0.0.1]/hook", "::ffff:127.0.0.1 is a loopback address"},
		{"https://127.1/hook", "127.1 is not a valid IP address"},
		{"https://2130706433/hook", "2130706433 is not a valid IP address"},
		{"https://0x7f000001/hook", "0x7f000001 is not a valid IP address"},
		{"https://mixed.example.com/hook", "mixed.example.com resolves to 10.1.2.3, a private address"},
		{"https://nat64.example.com/hook",
			"nat64.example.com resolves to 64:ff9b::a9fe:a9fe, a NAT64 address for 169.254.169.254, the cloud metadata address"},
		{"https://mapped.example/hook", "mapped.example resolves to 192.168.0.10, a private address"},
		{"https://nowhere.example.com/hook", "nowhere.example.com does not resolve to an address; receivers must be publicly reachable"},
		// Found accepted by a security review (issue 13).
		{"https://168.63.129.16/", "168.63.129.16 is the cloud metadata address; receivers must be publicly reachable"},
		{"https://[64:ff9b:1::a00:1]/", "64:ff9b:1::a00:1 is a local-use NAT64 address"},
		{"https://[fec0::1]/", "fec0::1 is a site-local address"},
		{"https://[2002:7f00:1::]/", "2002:7f00:1:: is a 6to4 address for 127.0.0.1, a loopback address"},
		{"https://[::127.0.0.1]/", "::127.0.0.1 is an IPv4-compatible address for 127.0.0.1, a loopback address"},
		{"https://sixtofour.example/hook", "sixtofour.example resolves to 2002:a9fe:a9fe::1, a 6to4 address for 169.254.169.254, the cloud metadata address"},
	} {
		err := egress.URLPolicy{Resolver: testResolver}.Check(context.Background(), tc.url)
		checkURLError(t, tc.url, err, tc.wantReason)
	}
}

func checkURLError(t *testing.T, url string, err error, wantReason string) {
	t.Helper()
	if wantReason == "" {
		if err != nil {
			t.Errorf("Check(%q) = %v; want allowed", url, err)
		}
		return
	}
	var ue *egress.URLError
	if !errors.As(err, &ue) {
		t.Errorf("Check(%q) = %#v; want a *URLError", url, err)
		return
	}
	if !strings.Contains(ue.Reason, wantReason) {
		t.Errorf("Check(%q) reason = %q; want it to contain %q", url, ue.Reason, wantReason)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Check(%q) error %q repeats the password", url, err)
	}
}

func TestCheckAllowInsecure(t *testing.T) {
	p := egress.URLPolicy{AllowInsecure: true, Resolver: testResolver}
	for _, url := range []string{
		"http://127.0.0.1:8080/x",
		"http://localhost:8080/x",
		"https://10.0.0.1/x",
		"http://[::1]:9000/x",
	} {
		if err := p.Check(context.Background(), url); err != nil {
			t.Errorf("Check(%q) = %v; want allowed", url, err)
		}
	}
	for url, want := range map[string]string{
		"ftp://127.0.0.1/x":               "must use http or https",
		"http://u:p@127.0.0.1/x":          "credentials",
		"http://nowhere.example.com:80/x": "does not resolve",
	} {
		checkURLError(t, url, p.Check(context.Background(), url), want)
	}
}

func TestCheckCanceledIsNotAURLError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := egress.URLPolicy{}.Check(ctx, "https://hooks.example.com/x")
	var ue *egress.URLError
	if !errors.Is(err, context.Canceled) || errors.As(err, &ue) {
		t.Fatalf("Check with a canceled context = %v", err)
	}
}

func TestURLErrorRedactsPassword(t *testing.T) {
	err := egress.URLPolicy{}.Check(context.Background(), "https://user:hunter2@hooks.example.com/x")
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "hooks.example.com") {
		t.Fatalf("error = %v", err)
	}
}

func TestAllowedAddr(t *testing.T) {
	for ip, want := range map[string]string{
		"93.184.216.34":             "",
		"8.8.8.8":                   "",
		"2606:4700:4700::1111":      "",
		"64:ff9b::5db8:d822":        "", // NAT64 of 93.184.216.34
		"::ffff:8.8.8.8":            "",
		"172.32.0.1":                "", // just outside 172.16/12
		"100.128.0.1":               "", // just outside 100.64/10
		"127.0.0.1":                 "a loopback address",
		"127.255.255.254":           "a loopback address",
		"::1":                       "a loopback address",
		"::ffff:127.0.0.1":          "a loopback address",
		"10.255.255.255":            "a private address",
		"172.31.255.255":            "a private address",
		"192.168.0.1":               "a private address",
		"::ffff:10.0.0.1":           "a private address",
		"169.254.169.254":           "the cloud metadata address",
		"fd00:ec2::254":             "the cloud metadata address",
		"169.254.0.1":               "a link-local address",
		"fe80::1":                   "a link-local address",
		"fe80::1%eth0":              "a link-local address",
		"ff02::1":                   "a multicast address",
		"224.0.0.1":                 "a multicast address",
		"239.255.255.250":           "a multicast address",
		"100.64.0.1":                "a carrier-grade NAT address",
		"100.127.255.255":           "a carrier-grade NAT address",
		"0.0.0.0":                   "an unspecified address",
		"::":                        "an unspecified address",
		"0.1.2.3":                   "a reserved address",
		"240.0.0.1":                 "a reserved address",
		"255.255.255.255":           "the broadcast address",
		"192.0.0.8":                 "a reserved address",
		"198.18.0.1":                "a benchmarking address",
		"198.19.255.255":            "a benchmarking address",
		"fc00::1":                   "a unique local address",
		"fdff:ffff::1":              "a unique local address",
		"2001:db8::1":               "a documentation address",
		"100::1":                    "a discard-only address",
		"64:ff9b::7f00:1":           "a NAT64 address for 127.0.0.1, a loopback address",
		"64:ff9b::a00:1":            "a NAT64 address for 10.0.0.1, a private address",
		"64:ff9b::a9fe:a9fe":        "a NAT64 address for 169.254.169.254, the cloud metadata address",
		"fe80::a9fe:a9fe%somewhere": "a link-local address",
	} {
		addr := netip.MustParseAddr(ip)
		err := egress.URLPolicy{}.AllowedAddr(addr)
		switch {
		case want == "" && err != nil:
			t.Errorf("AllowedAddr(%s) = %v; want allowed", ip, err)
		case want != "" && (err == nil || err.Error() != want):
			t.Errorf("AllowedAddr(%s) = %v; want %q", ip, err, want)
		}
		if err := (egress.URLPolicy{AllowInsecure: true}).AllowedAddr(addr); err != nil {
			t.Errorf("AllowInsecure: AllowedAddr(%s) = %v", ip, err)
		}
	}
	if err := (egress.URLPolicy{}).AllowedAddr(netip.Addr{}); err == nil {
		t.Error("the zero Addr was allowed")
	}
}

// TestAllowedAddrSpecialPurpose walks IANA's IPv4 and IPv6 Special-Purpose
// Address Registries (and the forms that carry an IPv4 address): each row
// is one entry, with an address inside it and one just outside where the
// edge matters.
func TestAllowedAddrSpecialPurpose(t *testing.T) {
	for _, tc := range []struct {
		ip, want, entry string // want "" means allowed
	}{
		// IPv4 registry.
		{"0.0.0.0", "an unspecified address", "0.0.0.0/32 this host on this network"},
		{"0.255.255.255", "a reserved address", "0.0.0.0/8 this network"},
		{"10.1.2.3", "a private address", "10.0.0.0/8"},
		{"100.64.0.0", "a carrier-grade NAT address", "100.64.0.0/10 shared address space"},
		{"100.100.100.200", "the cloud metadata address", "Alibaba Cloud metadata, in 100.64.0.0/10"},
		{"127.0.0.2", "a loopback address", "127.0.0.0/8"},
		{"169.254.170.2", "a link-local address", "169.254.0.0/16 (ECS task metadata)"},
		{"169.254.169.254", "the cloud metadata address", "IMDS"},
		{"168.63.129.16", "the cloud metadata address", "Azure WireServer"},
		{"168.63.129.17", "", "next to Azure WireServer: an ordinary public address"},
		{"172.20.0.1", "a private address", "172.16.0.0/12"},
		{"192.0.0.1", "a reserved address", "192.0.0.0/29 IPv4 service continuity"},
		{"192.0.0.9", "a reserved address", "192.0.0.9/32 PCP anycast"},
		{"192.0.0.10", "a reserved address", "192.0.0.10/32 TURN anycast"},
		{"192.0.0.170", "a reserved address", "192.0.0.170/32 NAT64/DNS64 discovery"},
		{"192.0.2.1", "a documentation address", "192.0.2.0/24 TEST-NET-1"},
		{"192.88.99.1", "a reserved address", "192.88.99.0/24 deprecated 6to4 relay anycast"},
		{"192.168.255.255", "a private address", "192.168.0.0/16"},
		{"198.18.0.0", "a benchmarking address", "198.18.0.0/15"},
		{"198.51.100.7", "a documentation address", "198.51.100.0/24 TEST-NET-2"},
		{"203.0.113.7", "a documentation address", "203.0.113.0/24 TEST-NET-3"},
		{"240.1.2.3", "a reserved address", "240.0.0.0/4"},
		{"255.255.255.255", "the broadcast address", "255.255.255.255/32"},
		{"224.0.0.251", "a multicast address", "224.0.0.0/4 (multicast registry)"},
		{"8.8.8.8", "", "public"},
		{"1.1.1.1", "", "public"},
		{"192.0.1.1", "", "just outside 192.0.0.0/24"},
		{"198.20.0.1", "", "just outside 198.18.0.0/15"},
		{"::ffff:168.63.129.16", "the cloud metadata address", "IPv4-mapped WireServer"},

		// IPv6 registry.
		{"::", "an unspecified address", "::/128"},
		{"::1", "a loopback address", "::1/128"},
		{"::ffff:169.254.169.254", "the cloud metadata address", "::ffff:0:0/96 IPv4-mapped"},
		{"64:ff9b::808:808", "", "64:ff9b::/96 NAT64 of 8.8.8.8: globally reachable"},
		{"64:ff9b::c0a8:1", "a NAT64 address for 192.168.0.1, a private address", "64:ff9b::/96 NAT64"},
		{"64:ff9b::a83f:8110", "a NAT64 address for 168.63.129.16, the cloud metadata address", "64:ff9b::/96 NAT64"},
		{"64:ff9b:1::a00:1", "a local-use NAT64 address", "64:ff9b:1::/48 local-use NAT64"},
		{"64:ff9b:1:ffff::808:808", "a local-use NAT64 address", "64:ff9b:1::/48, whatever it embeds"},
		{"100::1", "a discard-only address", "100::/64"},
		{"100:0:0:1::1", "a reserved address", "100:0:0:1::/64 dummy prefix"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "a Teredo address", "2001::/32 Teredo (public client 192.0.2.45)"},
		{"2001:0:4136:e378::80ff:fffe", "a Teredo address", "2001::/32 Teredo, client 127.0.0.1"},
		{"2001:1::1", "a reserved address", "2001:1::1/128 PCP anycast, in 2001::/23"},
		{"2001:2::1", "a benchmarking address", "2001:2::/48"},
		{"2001:3::1", "a reserved address", "2001:3::/32 AMT, in 2001::/23"},
		{"2001:10::1", "a reserved address", "2001:10::/28 deprecated ORCHID"},
		{"2001:20::1", "a reserved address", "2001:20::/28 ORCHIDv2, in 2001::/23"},
		{"2001:1ff::1", "a reserved address", "the end of 2001::/23"},
		{"2001:200::1", "", "just outside 2001::/23 (a real allocation)"},
		{"2001:db8:1::1", "a documentation address", "2001:db8::/32"},
		{"2002:7f00:1::", "a 6to4 address for 127.0.0.1, a loopback address", "2002::/16 6to4"},
		{"2002:a00:1::1", "a 6to4 address for 10.0.0.1, a private address", "2002::/16 6to4"},
		{"2002:a83f:8110::1", "a 6to4 address for 168.63.129.16, the cloud metadata address", "2002::/16 6to4"},
		{"2002:808:808::1", "", "2002::/16 6to4 of 8.8.8.8"},
		{"3fff::1", "a documentation address", "3fff::/20"},
		{"5f00::1", "a segment routing address", "5f00::/16 SRv6 SIDs"},
		{"fc00::1", "a unique local address", "fc00::/7"},
		{"fd00:ec2::254", "the cloud metadata address", "AWS IMDS over IPv6"},
		{"fe80::1", "a link-local address", "fe80::/10"},
		{"fec0::1", "a site-local address", "fec0::/10 deprecated site-local"},
		{"ff05::2", "a multicast address", "ff00::/8"},
		{"::127.0.0.1", "an IPv4-compatible address for 127.0.0.1, a loopback address", "::/96 IPv4-compatible"},
		{"::8.8.8.8", "an IPv4-compatible address for 8.8.8.8, a deprecated form", "::/96 IPv4-compatible"},
		{"::ffff:0:a9fe:a9fe", "an IPv4-translated address for 169.254.169.254, the cloud metadata address", "::ffff:0:0:0/96 SIIT"},
		{"::ffff:0:808:808", "an IPv4-translated address for 8.8.8.8, a deprecated form", "::ffff:0:0:0/96 SIIT"},
		{"4000::1", "a reserved address", "outside 2000::/3 global unicast"},
		{"2606:4700:4700::1111", "", "public (Cloudflare DNS)"},
		{"2a00:1450:4001:80b::200e", "", "public"},
	} {
		err := egress.URLPolicy{}.AllowedAddr(netip.MustParseAddr(tc.ip))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s (%s) = %v; want allowed", tc.ip, tc.entry, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s (%s) = %v; want %q", tc.ip, tc.entry, err, tc.want)
		}
	}
}
