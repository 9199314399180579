package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
)

const (
	validKey   = "sk_live_0123456789abcdef0123456789abcdef"
	expiredKey = "sk_live_fedcba9876543210fedcba9876543210"
)

// keyedRouter serves acme's valid and expired keys, throttling failures
// with a budget of burst.
func keyedRouter(burst int) http.Handler {
	keys := apikeys.NewIndex()
	for name, key := range map[string]string{"valid": validKey, "expired": expiredKey} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: name, Annotations: map[string]string{}},
			Type: switchboardv1.APIKeySecretType, Data: map[string][]byte{switchboardv1.APIKeySecretKey: []byte(key)}}
		if name == "expired" {
			s.Annotations[switchboardv1.APIKeyExpiresAtAnnotation] = "2020-01-01T00:00:00Z"
		}
		keys.Upsert(s)
	}
	return httpapi.NewRouter(httpapi.Config{Keys: keys, Log: logr.Discard(),
		AuthFailures: authlimit.New(authlimit.Options{Burst: burst, Rate: 0.1}, nil)})
}

// send asks for a path no route holds: 404 once authenticated.
func send(h http.Handler, addr, key string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/v1/no-such-resource", nil)
	r.RemoteAddr = addr + ":40000"
	r.Header.Set("Authorization", "Bearer "+key)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// Wrong keys from one address are answered 401 up to the burst, then 429
// with Retry-After and the rate_limited body, before the key is even
// looked at. The valid key from another address is never refused.
func TestWrongKeysFromOneAddressAreThrottled(t *testing.T) {
	h := keyedRouter(5)
	for i := range 5 {
		if rec := send(h, "203.0.113.7", "sk_live_guess_"+strconv.Itoa(i)+"_0123456789abcdef0123"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("wrong key %d: %d, want 401", i+1, rec.Code)
		}
	}
	for _, key := range []string{"sk_live_one_more_guess_0123456789abcdef", validKey} {
		rec := send(h, "203.0.113.7", key)
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
	if rec := send(h, "198.51.100.1", validKey); rec.Code != http.StatusNotFound {
		t.Fatalf("the valid key from another address: %d %s, want it authenticated (404)", rec.Code, rec.Body)
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
	h := httpapi.NewRouter(httpapi.Config{Keys: keys, Log: logr.Discard(),
		AuthFailures: authlimit.New(authlimit.Options{Burst: 1, Rate: 1}, func() time.Time { return now })})
	send(h, "203.0.113.7", "sk_live_guess_0123456789abcdef0123456789")
	if rec := send(h, "203.0.113.7", "sk_live_guess_0123456789abcdef0123456789"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("over the burst: %d, want 429", rec.Code)
	}
	now = now.Add(time.Second)
	if rec := send(h, "203.0.113.7", "sk_live_guess_0123456789abcdef0123456789"); rec.Code != http.StatusUnauthorized {
		t.Fatalf("a second later: %d, want 401", rec.Code)
	}
}
