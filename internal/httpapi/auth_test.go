package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/apikeys"
	"github.com/switchboard-dev/switchboard/internal/authlimit"
	"github.com/switchboard-dev/switchboard/internal/httpapi"
	"github.com/switchboard-dev/switchboard/internal/services"
)

const (
	validKey   = "sk_live_0123456789abcdef0123456789abcdef"
	expiredKey = "sk_live_fedcba9876543210fedcba9876543210"
)

// keyedRouter serves acme's valid and expired keys, throttling failures
// with a budget of burst, behind the trusted proxies.
func keyedRouter(burst int, trusted ...netip.Prefix) http.Handler {
	keys := apikeys.NewIndex()
	for name, key := range map[string]string{"valid": validKey, "expired": expiredKey} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: name, Annotations: map[string]string{}},
			Type: switchboardv1.APIKeySecretType, Data: map[string][]byte{switchboardv1.APIKeySecretKey: []byte(key)}}
		if name == "expired" {
			s.Annotations[switchboardv1.APIKeyExpiresAtAnnotation] = "2020-01-01T00:00:00Z"
		}
		keys.Upsert(s)
	}
	return httpapi.NewRouter(httpapi.Config{Log: logr.Discard(), Services: services.Services{Keys: keys,
		AuthFailures: authlimit.New(authlimit.Options{Burst: burst, Rate: 0.1, TrustedProxies: trusted}, nil)}})
}

// send asks for a path no route holds: 404 once authenticated.
func send(h http.Handler, addr, key string) *httptest.ResponseRecorder {
	return sendVia(h, addr, "", key)
}

// sendVia is send from the peer addr with the X-Forwarded-For header
// forwarded, when not "".
func sendVia(h http.Handler, addr, forwarded, key string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/v1/no-such-resource", nil)
	r.RemoteAddr = addr + ":40000"
	r.Header.Set("Authorization", "Bearer "+key)
	if forwarded != "" {
		r.Header.Set("X-Forwarded-For", forwarded)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// Wrong keys from one address are answered 401 up to the burst, then 429
// with Retry-After and the rate_limited body. The valid key is never
// refused for them: not from another address, and not from the same one
// (another client behind the same ingress, say).
func TestWrongKeysFromOneAddressAreThrottled(t *testing.T) {
	h := keyedRouter(5)
	for i := range 5 {
		if rec := send(h, "203.0.113.7", "sk_live_guess_"+strconv.Itoa(i)+"_0123456789abcdef0123"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("wrong key %d: %d, want 401", i+1, rec.Code)
		}
	}
	for range 2 {
		rec := send(h, "203.0.113.7", "sk_live_one_more_guess_0123456789abcdef")
		retry, err := strconv.Atoi(rec.Header().Get("Retry-After"))
		var body struct {
			Detail struct {
				Error     string `json:"error"`
				ErrorCode string `json:"error_code"`
			} `json:"detail"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != http.StatusTooManyRequests || err != nil || retry < 1 || retry > 10 ||
			body.Detail.ErrorCode != "rate_limited" || body.Detail.Error == "" {
			t.Fatalf("from the throttled address: %d, Retry-After %q, %s; want 429, 1..10 s, rate_limited",
				rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
	for _, addr := range []string{"203.0.113.7", "198.51.100.1"} {
		if rec := send(h, addr, validKey); rec.Code != http.StatusNotFound {
			t.Fatalf("the valid key from %s: %d %s, want it authenticated (404)", addr, rec.Code, rec.Body)
		}
	}
	if rec := send(h, "203.0.113.7", "sk_live_one_more_guess_0123456789abcdef"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("a wrong key after the valid one: %d, want 429 still (a success does not refill the budget)", rec.Code)
	}
}

// Behind a declared trusted proxy, each forwarded client has its own
// budget: one client's wrong keys do not throttle another's.
func TestForwardedClientsBehindATrustedProxyHaveTheirOwnBudgets(t *testing.T) {
	h := keyedRouter(2, netip.MustParsePrefix("10.0.0.0/8"))
	const proxy, guesser, other = "10.1.2.3", "203.0.113.7", "198.51.100.1"
	guess := "sk_live_guess_0123456789abcdef0123456789"
	for i := range 2 {
		if rec := sendVia(h, proxy, guesser, guess); rec.Code != http.StatusUnauthorized {
			t.Fatalf("the guesser's wrong key %d: %d, want 401", i+1, rec.Code)
		}
	}
	if rec := sendVia(h, proxy, guesser+", 10.9.9.9", guess); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("the guesser over its budget through two proxies: %d, want 429", rec.Code)
	}
	if rec := sendVia(h, proxy, other, guess); rec.Code != http.StatusUnauthorized {
		t.Fatalf("another forwarded client's first wrong key: %d, want 401 (a budget of its own)", rec.Code)
	}
	// A client cannot pick its budget by writing the header itself: only
	// the hop the trusted proxy appended counts.
	if rec := sendVia(h, proxy, "192.0.2.99, "+guesser, guess); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("the guesser naming another address before its own: %d, want 429", rec.Code)
	}
}

// A forwarding header from a peer that is not a trusted proxy is ignored:
// the failures count against the peer, whatever it claims.
func TestUntrustedPeersForwardedHeaderIsIgnored(t *testing.T) {
	for name, trusted := range map[string][]netip.Prefix{
		"no proxy declared":    nil,
		"another one declared": {netip.MustParsePrefix("10.0.0.0/8")},
	} {
		h := keyedRouter(2, trusted...)
		guess := "sk_live_guess_0123456789abcdef0123456789"
		for i := range 3 {
			forwarded := "198.51.100." + strconv.Itoa(i) // a new "client" each time
			rec := sendVia(h, "203.0.113.7", forwarded, guess)
			if want := []int{401, 401, 429}[i]; rec.Code != want {
				t.Fatalf("%s: wrong key %d claiming %s: %d, want %d", name, i+1, forwarded, rec.Code, want)
			}
		}
	}
}

// An expired key's failures count against its organization from any
// address; its valid keys go on working.
func TestExpiredKeyFailuresCountAgainstTheOrganization(t *testing.T) {
	h := keyedRouter(3)
	for i := range 3 {
		if rec := send(h, "203.0.113."+strconv.Itoa(i), expiredKey); rec.Code != http.StatusUnauthorized {
			t.Fatalf("expired key from address %d: %d, want 401", i, rec.Code)
		}
	}
	if rec := send(h, "203.0.113.50", expiredKey); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("the organization's 4th expired-key failure: %d, want 429", rec.Code)
	}
	if rec := send(h, "203.0.113.51", validKey); rec.Code != http.StatusNotFound {
		t.Fatalf("acme's valid key: %d %s, want it authenticated (404)", rec.Code, rec.Body)
	}
}

// Time refills an address's budget: it is not locked out for good.
func TestThrottledAddressMayTryAgainLater(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	keys := apikeys.NewIndex()
	h := httpapi.NewRouter(httpapi.Config{Log: logr.Discard(), Services: services.Services{Keys: keys,
		AuthFailures: authlimit.New(authlimit.Options{Burst: 1, Rate: 1}, func() time.Time { return now })}})
	send(h, "203.0.113.7", "sk_live_guess_0123456789abcdef0123456789")
	if rec := send(h, "203.0.113.7", "sk_live_guess_0123456789abcdef0123456789"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("over the burst: %d, want 429", rec.Code)
	}
	now = now.Add(time.Second)
	if rec := send(h, "203.0.113.7", "sk_live_guess_0123456789abcdef0123456789"); rec.Code != http.StatusUnauthorized {
		t.Fatalf("a second later: %d, want 401", rec.Code)
	}
}
