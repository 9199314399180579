// Package authlimit slows down the guessing of API keys, at the REST API
// and at the dashboard's sign-in, which share one Limiter.
//
// Failed authentications are counted per client in a token bucket: a
// client that has failed Burst times has its further failures answered
// 429 (with Retry-After) instead of 401, until time has refilled its
// bucket (Rate failures a second). Only failures are counted and only
// failures are refused: a request whose key is valid is served whoever
// failed before it, from whatever address, so neither an attacker nor a
// careless neighbour behind the same ingress can lock a real key out.
// Failures that name an organization (a known but expired key) also count
// against it: a client stuck on an expired key is answered 429 once the
// organization's bucket is empty, while its valid keys go on working.
//
// The client is the connection's address (http.Request.RemoteAddr),
// unless that address is one of the operator's declared trusted proxies
// (Options.TrustedProxies): then it is the address the proxies forwarded
// (X-Forwarded-For, else Forwarded), so clients behind an ingress have
// budgets of their own. A forwarding header from any other peer is
// ignored, since anyone can write one. IPv6 addresses count per /64, the
// block one subscriber usually holds.
package authlimit

import (
	"container/list"
	"flag"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Options are the budget of failures of one client, and of one
// organization, and the proxies whose word on the client is trusted.
type Options struct {
	// Burst failures may come at once.
	Burst int
	// Rate failures a second refill the burst.
	Rate float64
	// TrustedProxies are the networks of the proxies (ingress, load
	// balancer) whose forwarded client address is believed; none: the
	// connection's address is the client.
	TrustedProxies []netip.Prefix
}

// Defaults: 20 failures at once, then one a second.
var Defaults = Options{Burst: 20, Rate: 1}

// DefaultMaxAddresses is how many client addresses a Limiter remembers;
// the one that failed least recently is forgotten first.
const DefaultMaxAddresses = 10_000

// BindFlags binds o to the flags --auth-failure-burst and
// --auth-failure-rate, whose defaults are o's values.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.Burst, "auth-failure-burst", o.Burst, "Failed authentications (wrong API keys at the REST API "+
		"or at dashboard sign-in) one client address, or one organization for its expired keys, may make at once "+
		"before its failures are answered 429 (a valid key is always served).")
	fs.Float64Var(&o.Rate, "auth-failure-rate", o.Rate, "Failed authentications a second that refill an address's "+
		"(or organization's) burst.")
	fs.Func("trusted-proxies", "Comma-separated networks (CIDR) or addresses of the proxies in front of the REST API "+
		"and dashboard (ingress, load balancer): from these peers only, the client address in X-Forwarded-For "+
		"(else Forwarded) is the one failed authentications count against. Default none: the connection's address.",
		func(v string) error {
			p, err := ParseTrustedProxies(v)
			o.TrustedProxies = append(o.TrustedProxies, p...)
			return err
		})
}

// ParseTrustedProxies reads a comma-separated list of networks (CIDR) and
// addresses (a network of one).
func ParseTrustedProxies(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, field := range strings.Split(v, ",") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		p, err := netip.ParsePrefix(field)
		if err != nil {
			a, aerr := netip.ParseAddr(field)
			if aerr != nil {
				return nil, fmt.Errorf("--trusted-proxies: %q is neither a network (10.0.0.0/8) nor an address", field)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Validate refuses a budget that would refuse every failure or never
// refill.
func (o Options) Validate() error {
	if o.Burst < 1 || !(o.Rate > 0) || math.IsInf(o.Rate, 0) {
		return fmt.Errorf("--auth-failure-burst must be at least 1 and --auth-failure-rate a finite number above 0, got %d and %g",
			o.Burst, o.Rate)
	}
	return nil
}

// Limiter counts failed authentications. The zero value is not usable:
// call New. It is safe for concurrent use.
type Limiter struct {
	rate          rate.Limit
	burst         int
	now           func() time.Time
	addresses     *table
	organizations *table
	trusted       []netip.Prefix
}

// New returns a Limiter with the budget o; now is its clock (nil:
// time.Now).
func New(o Options, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{rate: rate.Limit(o.Rate), burst: o.Burst, now: now,
		addresses: newTable(DefaultMaxAddresses), organizations: newTable(DefaultMaxAddresses),
		trusted: o.TrustedProxies}
}

// Failed counts a failed attempt of the client addr (Limiter.Client) and,
// when not "", of organization. It returns how long the client must wait:
// when positive, this failure was over a budget and is answered 429, not
// 401. Only failures come here: a valid key is served without asking.
func (l *Limiter) Failed(addr, organization string) time.Duration {
	now := l.now()
	wait := l.take(l.addresses, addr, now)
	if organization != "" {
		wait = max(wait, l.take(l.organizations, organization, now))
	}
	return wait
}

// take takes a failure from name's bucket in t, or says how long until
// there is one to take.
func (l *Limiter) take(t *table, name string, now time.Time) time.Duration {
	b := t.getOrAdd(name, func() *rate.Limiter { return rate.NewLimiter(l.rate, l.burst) })
	if b.AllowN(now, 1) {
		return 0
	}
	return l.until(b, now)
}

// until is how long until b holds a whole failure.
func (l *Limiter) until(b *rate.Limiter, now time.Time) time.Duration {
	missing := 1 - b.TokensAt(now)
	if missing <= 0 {
		return 0
	}
	return time.Duration(missing / float64(l.rate) * float64(time.Second))
}

// RetryAfter is wait as a Retry-After header: whole seconds, rounded up.
func RetryAfter(wait time.Duration) string {
	return strconv.FormatFloat(max(math.Ceil(wait.Seconds()), 1), 'f', 0, 64)
}

// table is a bounded map of buckets: adding one to a full table forgets
// the least recently used, so memory stays bounded whatever the number of
// addresses.
type table struct {
	mu     sync.Mutex
	max    int
	byName map[string]*list.Element
	order  *list.List // of *entry, most recently used first
}

type entry struct {
	name   string
	bucket *rate.Limiter
}

func newTable(maxEntries int) *table {
	return &table{max: maxEntries, byName: map[string]*list.Element{}, order: list.New()}
}

func (t *table) get(name string) *rate.Limiter {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.byName[name]
	if e == nil {
		return nil
	}
	t.order.MoveToFront(e)
	return e.Value.(*entry).bucket
}

func (t *table) getOrAdd(name string, create func() *rate.Limiter) *rate.Limiter {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.byName[name]; e != nil {
		t.order.MoveToFront(e)
		return e.Value.(*entry).bucket
	}
	if t.order.Len() >= t.max {
		oldest := t.order.Back()
		t.order.Remove(oldest)
		delete(t.byName, oldest.Value.(*entry).name)
	}
	b := create()
	t.byName[name] = t.order.PushFront(&entry{name: name, bucket: b})
	return b
}

// len is how many buckets t holds.
func (t *table) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.order.Len()
}
