package webhook_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/webhook"
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
	} {
		err := webhook.URLPolicy{Resolver: testResolver}.Check(context.Background(), tc.url)
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
	var ue *webhook.URLError
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
	p := webhook.URLPolicy{AllowInsecure: true, Resolver: testResolver}
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
	err := webhook.URLPolicy{}.Check(ctx, "https://hooks.example.com/x")
	var ue *webhook.URLError
	if !errors.Is(err, context.Canceled) || errors.As(err, &ue) {
		t.Fatalf("Check with a canceled context = %v", err)
	}
}

func TestURLErrorRedactsPassword(t *testing.T) {
	err := webhook.URLPolicy{}.Check(context.Background(), "https://user:hunter2@hooks.example.com/x")
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
		err := webhook.URLPolicy{}.AllowedAddr(addr)
		switch {
		case want == "" && err != nil:
			t.Errorf("AllowedAddr(%s) = %v; want allowed", ip, err)
		case want != "" && (err == nil || err.Error() != want):
			t.Errorf("AllowedAddr(%s) = %v; want %q", ip, err, want)
		}
		if err := (webhook.URLPolicy{AllowInsecure: true}).AllowedAddr(addr); err != nil {
			t.Errorf("AllowInsecure: AllowedAddr(%s) = %v", ip, err)
		}
	}
	if err := (webhook.URLPolicy{}).AllowedAddr(netip.Addr{}); err == nil {
		t.Error("the zero Addr was allowed")
	}
}
