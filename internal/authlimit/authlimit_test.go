package authlimit

import (
	"fmt"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// clock is a settable now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newLimiter() (*Limiter, *clock) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	return New(Options{Burst: 3, Rate: 0.5}, c.now), c
}

// An address is held back once it used its burst, by its own failures
// only, and lets in again as its bucket refills.
func TestAddressIsHeldBackByItsOwnFailures(t *testing.T) {
	l, c := newLimiter()
	for i := range 3 {
		if wait := l.Failed("203.0.113.7", ""); wait != 0 {
			t.Fatalf("failure %d within the burst: wait %s", i+1, wait)
		}
	}
	if wait := l.Failed("203.0.113.7", ""); wait != 2*time.Second {
		t.Fatalf("a failure over the burst: wait %s, want 2s (one failure at 0.5/s)", wait)
	}
	if wait := l.Failed("198.51.100.1", ""); wait != 0 {
		t.Fatalf("another address waits %s, want 0: it never failed", wait)
	}
	c.t = c.t.Add(2 * time.Second)
	if wait := l.Failed("203.0.113.7", ""); wait != 0 {
		t.Fatalf("2 s later: wait %s, want 0", wait)
	}
}

// Failures with an organization's expired key count against it whatever
// the address, and never against another organization.
func TestOrganizationBudget(t *testing.T) {
	l, _ := newLimiter()
	for i := range 3 {
		if wait := l.Failed(fmt.Sprint("203.0.113.", i), "acme"); wait != 0 {
			t.Fatalf("failure %d within acme's burst: wait %s", i+1, wait)
		}
	}
	if wait := l.Failed("203.0.113.9", "acme"); wait <= 0 {
		t.Fatal("acme's failures over its burst are not held back")
	}
	if wait := l.Failed("203.0.113.10", "globex"); wait != 0 {
		t.Fatalf("globex waits %s for acme's failures", wait)
	}
}

// However many addresses fail, the table holds at most its bound,
// forgetting the least recently used first.
func TestTableIsBounded(t *testing.T) {
	tb := newTable(100)
	for i := range 1000 {
		tb.getOrAdd(fmt.Sprint(i), func() *rate.Limiter { return rate.NewLimiter(1, 1) })
	}
	if n := tb.len(); n != 100 {
		t.Fatalf("%d entries held, want 100", n)
	}
	if tb.get("0") != nil || tb.get("999") == nil {
		t.Fatal("the oldest entry is kept, or the newest forgotten")
	}
}

func TestClientAddr(t *testing.T) {
	for remote, want := range map[string]string{
		"203.0.113.7:52100":              "203.0.113.7",
		"[2001:db8:1:2:3:4:5:6]:443":     "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:443":     "2001:db8:1:2::/64", // the same subscriber's block
		"[::ffff:203.0.113.7]:8080":      "203.0.113.7",
		"not-an-address":                 "not-an-address",
		"[2001:db8:1:3::1]:443":          "2001:db8:1:3::/64",
		"192.0.2.1:1":                    "192.0.2.1",
		"[fe80::1%eth0]:80":              "fe80::/64",
		"[2001:db8:ffff:ffff:1::1]:1234": "2001:db8:ffff:ffff::/64",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		r.Header.Set("X-Forwarded-For", "198.51.100.1") // no proxy is trusted
		if got := New(Defaults, nil).Client(r); got != want {
			t.Errorf("Client(%q) = %q, want %q", remote, got, want)
		}
	}
}

// Behind trusted proxies, the client is the first hop, from the right,
// that is not one of them; a hop that cannot be read stops the walk at the
// last trusted proxy.
func TestForwardedClient(t *testing.T) {
	l := New(Options{Burst: 1, Rate: 1, TrustedProxies: []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}}, nil)
	for _, tc := range []struct{ peer, xff, forwarded, want string }{
		{"10.0.0.1:1", "203.0.113.7", "", "203.0.113.7"},
		{"10.0.0.1:1", "192.0.2.1, 203.0.113.7, 10.0.0.2", "", "203.0.113.7"},
		{"10.0.0.1:1", "203.0.113.7:4711", "", "203.0.113.7"},
		{"10.0.0.1:1", "[2001:db8:1:2::9]:4711", "", "2001:db8:1:2::/64"},
		{"10.0.0.1:1", "unknown", "", "10.0.0.1"},
		{"10.0.0.1:1", "203.0.113.7, garbage", "", "10.0.0.1"},
		{"10.0.0.1:1", "", `for=192.0.2.60;proto=http, for="[2001:db8::1]:4711"`, "2001:db8::/64"},
		{"10.0.0.1:1", "", `For=192.0.2.60;proto=http`, "192.0.2.60"},
		{"10.0.0.1:1", "", "", "10.0.0.1"},
		{"[2001:db8:ffff:1::1]:1", "203.0.113.9", "", "203.0.113.9"},
		{"[::ffff:10.0.0.1]:1", "203.0.113.9", "", "203.0.113.9"},
		{"203.0.113.1:1", "198.51.100.1", "for=198.51.100.2", "203.0.113.1"}, // not a trusted peer
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.peer
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if tc.forwarded != "" {
			r.Header.Set("Forwarded", tc.forwarded)
		}
		if got := l.Client(r); got != tc.want {
			t.Errorf("peer %s, X-Forwarded-For %q, Forwarded %q: %q, want %q", tc.peer, tc.xff, tc.forwarded, got, tc.want)
		}
	}
}

func TestParseTrustedProxies(t *testing.T) {
	got, err := ParseTrustedProxies(" 10.0.0.0/8, 192.0.2.7,2001:db8::/32,10.1.2.3/8")
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"),
		netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("10.0.0.0/8")}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("= %v, %v; want %v", got, err, want)
	}
	if _, err := ParseTrustedProxies("10.0.0.0/8,ingress.local"); err == nil {
		t.Fatal("a host name is accepted")
	}
}

func TestRetryAfter(t *testing.T) {
	for wait, want := range map[time.Duration]string{time.Millisecond: "1", time.Second: "1", 1500 * time.Millisecond: "2", 0: "1"} {
		if got := RetryAfter(wait); got != want {
			t.Errorf("RetryAfter(%s) = %q, want %q", wait, got, want)
		}
	}
}
