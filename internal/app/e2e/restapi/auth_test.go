package restapi_test

// Authentication and organization scoping (bearer API keys, one organization each): what a caller
// with a missing, wrong, expired, revoked or foreign key gets.

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/organizations"
)

func TestAuthRejectsBadCredentials(t *testing.T) {
	o := NewOrg(t)
	id := o.CreateCall(t, "+14155551234", nil)
	endpoints := []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/calls", o.CallBody("+14155551234", nil)},
		{"GET", "/v1/calls/" + id, nil},
		{"GET", "/v1/calls/" + id + "/recording", nil},
	}
	// says is what the detail tells the caller, which never names the key.
	const missing, malformed, invalid = "Missing API key", "not of the form Bearer <API key>", "Invalid API key."
	credentials := []struct{ name, authorization, says string }{
		{"no Authorization header", "", missing},
		{"Basic scheme", "Basic " + o.Key, malformed},
		{"Token scheme", "Token " + o.Key, malformed},
		{"key without a scheme", o.Key, malformed},
		{"Bearer without a key", "Bearer", missing},
		{"Bearer with a blank key", "Bearer    ", missing},
		{"unknown key", "Bearer sk_test_" + RandHex(16), invalid},
		{"key with a character changed", "Bearer " + o.Key[:len(o.Key)-1] + "x", invalid},
		{"key with a suffix", "Bearer " + o.Key + "0", invalid},
	}
	for _, ep := range endpoints {
		for _, cred := range credentials {
			t.Run(ep.method+" "+strings.Replace(ep.path, id, "{id}", 1)+" "+cred.name, func(t *testing.T) {
				before := CountCalls(t, o.Ns)
				r := DoWithAuthorization(t, ep.method, ep.path, cred.authorization, ep.body)
				msg := ExpectStringDetail(t, r, http.StatusUnauthorized)
				NewWithT(t).Expect(msg).NotTo(ContainSubstring(o.Key), "the detail echoes the key")
				NewWithT(t).Expect(msg).To(ContainSubstring(cred.says))
				NewWithT(t).Expect(CountCalls(t, o.Ns)).To(Equal(before), "an unauthenticated request left a Call behind")
			})
		}
	}
	// The same key, correctly sent, works: the failures above are the credentials'.
	t.Run("control", func(t *testing.T) {
		r := DoWithAuthorization(t, "GET", "/v1/calls/"+id, "Bearer "+o.Key, nil)
		ExpectStatusJSON(t, r, http.StatusOK)
	})
}

func TestExpiredKeys(t *testing.T) {
	o := NewOrg(t)
	t.Run("expired key", func(t *testing.T) {
		g := NewWithT(t)
		expired := CreateKey(t, o.Ns, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
		// Until the informer delivers it the key is merely unknown.
		g.Eventually(func() string {
			r := Do(t, "GET", "/v1/calls/call_0", expired, nil)
			msg, _ := r.Body["detail"].(string)
			return strings.ToLower(msg)
		}, 10*time.Second, 20*time.Millisecond).Should(ContainSubstring("expire"))
		before := CountCalls(t, o.Ns)
		for _, ep := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/v1/calls", o.CallBody("+14155551234", nil)},
			{"GET", "/v1/calls/call_0", nil},
			{"GET", "/v1/calls/call_0/recording", nil},
		} {
			msg := ExpectStringDetail(t, Do(t, ep.method, ep.path, expired, ep.body), http.StatusUnauthorized)
			g.Expect(strings.ToLower(msg)).To(ContainSubstring("expire"), "%s %s", ep.method, ep.path)
		}
		g.Expect(CountCalls(t, o.Ns)).To(Equal(before), "an expired key placed a call")
	})
	t.Run("key expiring in the future", func(t *testing.T) {
		g := NewWithT(t)
		future := CreateKey(t, o.Ns, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		r := Do(t, "POST", "/v1/calls", future, o.CallBody("+14155551234", nil))
		ExpectStatusJSON(t, r, http.StatusCreated)
		g.Expect(r.Body["call_id"]).To(MatchRegexp(CallIDPattern))
		// The call belongs to the organization, not to the key.
		g.Expect(o.GetCall(t, r.Body["call_id"].(string))).To(HaveKeyWithValue("status", BeElementOf("queued", "in_progress")))
	})
	t.Run("key expiring while in use", func(t *testing.T) {
		g := NewWithT(t)
		// createKey returns once the key has worked: before its expiry,
		// which leaves the informer five seconds to deliver it even on a
		// loaded machine (the expiry has whole seconds). The ordering of
		// what the test sees is the check: working, then refused, and
		// refused only once the expiry has passed.
		at := time.Now().Add(5 * time.Second).Truncate(time.Second).Add(time.Second)
		soon := CreateKey(t, o.Ns, at.UTC().Format(time.RFC3339))
		g.Eventually(func() int { return KeyStatus(t, soon) }, 10*time.Second, 50*time.Millisecond).
			Should(Equal(http.StatusUnauthorized))
		g.Expect(time.Now()).To(BeTemporally(">=", at), "the key stopped working before its expiry")
		msg := ExpectStringDetail(t, Do(t, "GET", "/v1/calls/call_0", soon, nil), http.StatusUnauthorized)
		g.Expect(strings.ToLower(msg)).To(ContainSubstring("expire"))
	})
	t.Run("unreadable expiry fails closed", func(t *testing.T) {
		g := NewWithT(t)
		key := "sk_test_" + RandHex(16)
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, GenerateName: "api-key-",
				Annotations: map[string]string{switchboardv1.APIKeyExpiresAtAnnotation: "next tuesday"}},
			Type: switchboardv1.APIKeySecretType,
			Data: map[string][]byte{switchboardv1.APIKeySecretKey: []byte(key)},
		}
		g.Expect(K8s.Create(context.Background(), s)).To(Succeed())
		g.Eventually(func() string {
			msg, _ := Do(t, "GET", "/v1/calls/call_0", key, nil).Body["detail"].(string)
			return strings.ToLower(msg)
		}, 10*time.Second, 20*time.Millisecond).Should(ContainSubstring("expire"))
		ExpectStringDetail(t, Do(t, "GET", "/v1/calls/call_0", key, nil), http.StatusUnauthorized)
	})
}

func TestRevokedKey(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	other := CreateKey(t, o.Ns, "")
	id := o.CreateCall(t, "+14155551234", nil)

	g.Expect(K8s.Delete(context.Background(), KeySecret(t, o.Ns, o.Key))).To(Succeed())
	g.Eventually(func() int { return KeyStatus(t, o.Key) }, 5*time.Second, 20*time.Millisecond).
		Should(Equal(http.StatusUnauthorized), "a deleted key kept working")

	before := CountCalls(t, o.Ns)
	ExpectStringDetail(t, Do(t, "POST", "/v1/calls", o.Key, o.CallBody("+14155551234", nil)), http.StatusUnauthorized)
	ExpectStringDetail(t, Do(t, "GET", "/v1/calls/"+id, o.Key, nil), http.StatusUnauthorized)
	ExpectStringDetail(t, Do(t, "GET", "/v1/calls/"+id+"/recording", o.Key, nil), http.StatusUnauthorized)
	g.Expect(CountCalls(t, o.Ns)).To(Equal(before), "a revoked key placed a call")

	// The organization's other key is untouched.
	r := Do(t, "GET", "/v1/calls/"+id, other, nil)
	ExpectStatusJSON(t, r, http.StatusOK)
	g.Expect(r.Body).To(HaveKeyWithValue("call_id", id))
}

func TestKeyChangedInPlace(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	old := o.Key
	s := KeySecret(t, o.Ns, old)
	fresh := "sk_test_" + RandHex(16)
	s.Data[switchboardv1.APIKeySecretKey] = []byte(fresh)
	g.Expect(K8s.Update(context.Background(), s)).To(Succeed())

	g.Eventually(func() []int { return []int{KeyStatus(t, old), KeyStatus(t, fresh)} }, 5*time.Second, 20*time.Millisecond).
		Should(Equal([]int{http.StatusUnauthorized, http.StatusNotFound}), "statuses of the old and the new key")
	ExpectStringDetail(t, Do(t, "GET", "/v1/calls/call_0", old, nil), http.StatusUnauthorized)

	o.Key = fresh
	id := o.CreateCall(t, "+14155551234", nil)
	g.Expect(o.GetCall(t, id)).To(HaveKeyWithValue("call_id", id))
	before := CountCalls(t, o.Ns)
	ExpectStringDetail(t, Do(t, "POST", "/v1/calls", old, o.CallBody("+14155551234", nil)), http.StatusUnauthorized)
	g.Expect(CountCalls(t, o.Ns)).To(Equal(before))
}

func TestOrganizationsAreIsolated(t *testing.T) {
	g := NewWithT(t)
	a, b := NewOrg(t), NewOrg(t)
	answered := a.CreateCall(t, "+14155551234", nil)
	failed := Do(t, "POST", "/v1/calls", a.Key, a.CallBody("+14155550008", nil))
	ExpectStatusJSON(t, failed, http.StatusBadGateway)
	failedID := Detail(t, failed)["call_id"].(string)
	a.WaitAnalyzed(t, answered)
	rec := Do(t, "GET", "/v1/calls/"+answered+"/recording", a.Key, nil)
	ExpectStatusJSON(t, rec, http.StatusOK)

	for _, path := range []string{
		"/v1/calls/" + answered, "/v1/calls/" + answered + "/recording",
		"/v1/calls/" + failedID, "/v1/calls/" + failedID + "/recording",
	} {
		r := Do(t, "GET", path, b.Key, nil)
		msg := ExpectStringDetail(t, r, http.StatusNotFound)
		g.Expect(msg).NotTo(ContainSubstring(a.Ns), "%s: the detail reveals the other organization", path)
		g.Expect(string(r.Raw)).NotTo(ContainSubstring("recordings/"), path)
	}

	beforeA, beforeB := CountCalls(t, a.Ns), CountCalls(t, b.Ns)
	r := Do(t, "POST", "/v1/calls", b.Key, b.CallBody("+14155551234", func(body map[string]any) {
		body["agent_id"] = a.AgentID
	}))
	d := ExpectErrorDetail(t, r, http.StatusNotFound, "agent_not_found")
	g.Expect(d["call_id"]).To(BeNil())
	g.Expect(CountCalls(t, a.Ns)).To(Equal(beforeA), "org B placed a call in org A")
	g.Expect(CountCalls(t, b.Ns)).To(Equal(beforeB), "a refused call left a Call behind")

	// And each organization still sees its own.
	g.Expect(a.GetCall(t, answered)).To(HaveKeyWithValue("status", "ended"))
	g.Expect(a.GetCall(t, failedID)).To(HaveKeyWithValue("status", "failed"))
}

// A key shorter than 32 characters authenticates nobody: the Secret gets a
// Warning Event saying why, and the organization's other keys work.
func TestShortKeyIsRefused(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	short := "sk_test_" + RandHex(8) // 24 characters
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "short-key"},
		Type: switchboardv1.APIKeySecretType, Data: map[string][]byte{switchboardv1.APIKeySecretKey: []byte(short)}}
	g.Expect(K8s.Create(context.Background(), s)).To(Succeed())
	g.Eventually(func() []string { return EventReasons(t, o.Ns, s.Name) }, 10*time.Second, 100*time.Millisecond).
		Should(ContainElement(organizations.ReasonAPIKeyRefused))
	g.Expect(KeyStatus(t, short)).To(Equal(http.StatusUnauthorized), "the short key authenticates")
	g.Expect(KeyStatus(t, o.Key)).To(Equal(http.StatusNotFound), "the organization's long key stopped working")
}
