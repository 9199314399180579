package app_test

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
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/organizations"
)

// keySecret returns the API-key Secret of ns that holds key.
func keySecret(t *testing.T, ns, key string) *corev1.Secret {
	t.Helper()
	var secrets corev1.SecretList
	NewWithT(t).Expect(k8s.List(context.Background(), &secrets, client.InNamespace(ns))).To(Succeed())
	for i := range secrets.Items {
		s := &secrets.Items[i]
		if s.Type == switchboardv1.APIKeySecretType && string(s.Data[switchboardv1.APIKeySecretKey]) == key {
			return s
		}
	}
	t.Fatalf("no API-key Secret in %s holds the key", ns)
	return nil
}

// keyStatus is the status GET /v1/calls/call_0 gives key: 404 for a key
// that works (the call does not exist), 401 for one that does not.
func keyStatus(t *testing.T, key string) int {
	t.Helper()
	return do(t, "GET", "/v1/calls/call_0", key, nil).status
}

func TestAuthRejectsBadCredentials(t *testing.T) {
	o := newOrg(t)
	id := o.createCall(t, "+14155551234", nil)
	endpoints := []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/calls", o.callBody("+14155551234", nil)},
		{"GET", "/v1/calls/" + id, nil},
		{"GET", "/v1/calls/" + id + "/recording", nil},
	}
	// says is what the detail tells the caller, which never names the key.
	const missing, malformed, invalid = "Missing API key", "not of the form Bearer <API key>", "Invalid API key."
	credentials := []struct{ name, authorization, says string }{
		{"no Authorization header", "", missing},
		{"Basic scheme", "Basic " + o.key, malformed},
		{"Token scheme", "Token " + o.key, malformed},
		{"key without a scheme", o.key, malformed},
		{"Bearer without a key", "Bearer", missing},
		{"Bearer with a blank key", "Bearer    ", missing},
		{"unknown key", "Bearer sk_test_" + randHex(16), invalid},
		{"key with a character changed", "Bearer " + o.key[:len(o.key)-1] + "x", invalid},
		{"key with a suffix", "Bearer " + o.key + "0", invalid},
	}
	for _, ep := range endpoints {
		for _, cred := range credentials {
			t.Run(ep.method+" "+strings.Replace(ep.path, id, "{id}", 1)+" "+cred.name, func(t *testing.T) {
				before := countCalls(t, o.ns)
				r := doWithAuthorization(t, ep.method, ep.path, cred.authorization, ep.body)
				msg := expectStringDetail(t, r, http.StatusUnauthorized)
				NewWithT(t).Expect(msg).NotTo(ContainSubstring(o.key), "the detail echoes the key")
				NewWithT(t).Expect(msg).To(ContainSubstring(cred.says))
				NewWithT(t).Expect(countCalls(t, o.ns)).To(Equal(before), "an unauthenticated request left a Call behind")
			})
		}
	}
	// The same key, correctly sent, works: the failures above are the credentials'.
	t.Run("control", func(t *testing.T) {
		r := doWithAuthorization(t, "GET", "/v1/calls/"+id, "Bearer "+o.key, nil)
		expectStatusJSON(t, r, http.StatusOK)
	})
}

func TestExpiredKeys(t *testing.T) {
	o := newOrg(t)
	t.Run("expired key", func(t *testing.T) {
		g := NewWithT(t)
		expired := createKey(t, o.ns, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
		// Until the informer delivers it the key is merely unknown.
		g.Eventually(func() string {
			r := do(t, "GET", "/v1/calls/call_0", expired, nil)
			msg, _ := r.body["detail"].(string)
			return strings.ToLower(msg)
		}, 10*time.Second, 20*time.Millisecond).Should(ContainSubstring("expire"))
		before := countCalls(t, o.ns)
		for _, ep := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/v1/calls", o.callBody("+14155551234", nil)},
			{"GET", "/v1/calls/call_0", nil},
			{"GET", "/v1/calls/call_0/recording", nil},
		} {
			msg := expectStringDetail(t, do(t, ep.method, ep.path, expired, ep.body), http.StatusUnauthorized)
			g.Expect(strings.ToLower(msg)).To(ContainSubstring("expire"), "%s %s", ep.method, ep.path)
		}
		g.Expect(countCalls(t, o.ns)).To(Equal(before), "an expired key placed a call")
	})
	t.Run("key expiring in the future", func(t *testing.T) {
		g := NewWithT(t)
		future := createKey(t, o.ns, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		r := do(t, "POST", "/v1/calls", future, o.callBody("+14155551234", nil))
		expectStatusJSON(t, r, http.StatusCreated)
		g.Expect(r.body["call_id"]).To(MatchRegexp(callIDPattern))
		// The call belongs to the organization, not to the key.
		g.Expect(o.getCall(t, r.body["call_id"].(string))).To(HaveKeyWithValue("status", BeElementOf("queued", "in_progress")))
	})
	t.Run("key expiring while in use", func(t *testing.T) {
		g := NewWithT(t)
		// createKey returns once the key has worked: before its expiry,
		// which leaves the informer five seconds to deliver it even on a
		// loaded machine (the expiry has whole seconds). The ordering of
		// what the test sees is the check: working, then refused, and
		// refused only once the expiry has passed.
		at := time.Now().Add(5 * time.Second).Truncate(time.Second).Add(time.Second)
		soon := createKey(t, o.ns, at.UTC().Format(time.RFC3339))
		g.Eventually(func() int { return keyStatus(t, soon) }, 10*time.Second, 50*time.Millisecond).
			Should(Equal(http.StatusUnauthorized))
		g.Expect(time.Now()).To(BeTemporally(">=", at), "the key stopped working before its expiry")
		msg := expectStringDetail(t, do(t, "GET", "/v1/calls/call_0", soon, nil), http.StatusUnauthorized)
		g.Expect(strings.ToLower(msg)).To(ContainSubstring("expire"))
	})
	t.Run("unreadable expiry fails closed", func(t *testing.T) {
		g := NewWithT(t)
		key := "sk_test_" + randHex(16)
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, GenerateName: "api-key-",
				Annotations: map[string]string{switchboardv1.APIKeyExpiresAtAnnotation: "next tuesday"}},
			Type: switchboardv1.APIKeySecretType,
			Data: map[string][]byte{switchboardv1.APIKeySecretKey: []byte(key)},
		}
		g.Expect(k8s.Create(context.Background(), s)).To(Succeed())
		g.Eventually(func() string {
			msg, _ := do(t, "GET", "/v1/calls/call_0", key, nil).body["detail"].(string)
			return strings.ToLower(msg)
		}, 10*time.Second, 20*time.Millisecond).Should(ContainSubstring("expire"))
		expectStringDetail(t, do(t, "GET", "/v1/calls/call_0", key, nil), http.StatusUnauthorized)
	})
}

func TestRevokedKey(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	other := createKey(t, o.ns, "")
	id := o.createCall(t, "+14155551234", nil)

	g.Expect(k8s.Delete(context.Background(), keySecret(t, o.ns, o.key))).To(Succeed())
	g.Eventually(func() int { return keyStatus(t, o.key) }, 5*time.Second, 20*time.Millisecond).
		Should(Equal(http.StatusUnauthorized), "a deleted key kept working")

	before := countCalls(t, o.ns)
	expectStringDetail(t, do(t, "POST", "/v1/calls", o.key, o.callBody("+14155551234", nil)), http.StatusUnauthorized)
	expectStringDetail(t, do(t, "GET", "/v1/calls/"+id, o.key, nil), http.StatusUnauthorized)
	expectStringDetail(t, do(t, "GET", "/v1/calls/"+id+"/recording", o.key, nil), http.StatusUnauthorized)
	g.Expect(countCalls(t, o.ns)).To(Equal(before), "a revoked key placed a call")

	// The organization's other key is untouched.
	r := do(t, "GET", "/v1/calls/"+id, other, nil)
	expectStatusJSON(t, r, http.StatusOK)
	g.Expect(r.body).To(HaveKeyWithValue("call_id", id))
}

func TestKeyChangedInPlace(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	old := o.key
	s := keySecret(t, o.ns, old)
	fresh := "sk_test_" + randHex(16)
	s.Data[switchboardv1.APIKeySecretKey] = []byte(fresh)
	g.Expect(k8s.Update(context.Background(), s)).To(Succeed())

	g.Eventually(func() []int { return []int{keyStatus(t, old), keyStatus(t, fresh)} }, 5*time.Second, 20*time.Millisecond).
		Should(Equal([]int{http.StatusUnauthorized, http.StatusNotFound}), "statuses of the old and the new key")
	expectStringDetail(t, do(t, "GET", "/v1/calls/call_0", old, nil), http.StatusUnauthorized)

	o.key = fresh
	id := o.createCall(t, "+14155551234", nil)
	g.Expect(o.getCall(t, id)).To(HaveKeyWithValue("call_id", id))
	before := countCalls(t, o.ns)
	expectStringDetail(t, do(t, "POST", "/v1/calls", old, o.callBody("+14155551234", nil)), http.StatusUnauthorized)
	g.Expect(countCalls(t, o.ns)).To(Equal(before))
}

func TestOrganizationsAreIsolated(t *testing.T) {
	g := NewWithT(t)
	a, b := newOrg(t), newOrg(t)
	answered := a.createCall(t, "+14155551234", nil)
	failed := do(t, "POST", "/v1/calls", a.key, a.callBody("+14155550008", nil))
	expectStatusJSON(t, failed, http.StatusBadGateway)
	failedID := detail(t, failed)["call_id"].(string)
	a.waitAnalyzed(t, answered)
	rec := do(t, "GET", "/v1/calls/"+answered+"/recording", a.key, nil)
	expectStatusJSON(t, rec, http.StatusOK)

	for _, path := range []string{
		"/v1/calls/" + answered, "/v1/calls/" + answered + "/recording",
		"/v1/calls/" + failedID, "/v1/calls/" + failedID + "/recording",
	} {
		r := do(t, "GET", path, b.key, nil)
		msg := expectStringDetail(t, r, http.StatusNotFound)
		g.Expect(msg).NotTo(ContainSubstring(a.ns), "%s: the detail reveals the other organization", path)
		g.Expect(string(r.raw)).NotTo(ContainSubstring("recordings/"), path)
	}

	beforeA, beforeB := countCalls(t, a.ns), countCalls(t, b.ns)
	r := do(t, "POST", "/v1/calls", b.key, b.callBody("+14155551234", func(body map[string]any) {
		body["agent_id"] = a.agentID
	}))
	d := expectErrorDetail(t, r, http.StatusNotFound, "agent_not_found")
	g.Expect(d["call_id"]).To(BeNil())
	g.Expect(countCalls(t, a.ns)).To(Equal(beforeA), "org B placed a call in org A")
	g.Expect(countCalls(t, b.ns)).To(Equal(beforeB), "a refused call left a Call behind")

	// And each organization still sees its own.
	g.Expect(a.getCall(t, answered)).To(HaveKeyWithValue("status", "ended"))
	g.Expect(a.getCall(t, failedID)).To(HaveKeyWithValue("status", "failed"))
}

// A key shorter than 32 characters authenticates nobody: the Secret gets a
// Warning Event saying why, and the organization's other keys work.
func TestShortKeyIsRefused(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	short := "sk_test_" + randHex(8) // 24 characters
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: "short-key"},
		Type: switchboardv1.APIKeySecretType, Data: map[string][]byte{switchboardv1.APIKeySecretKey: []byte(short)}}
	g.Expect(k8s.Create(context.Background(), s)).To(Succeed())
	g.Eventually(func() []string { return eventReasons(t, o.ns, s.Name) }, 10*time.Second, 100*time.Millisecond).
		Should(ContainElement(organizations.ReasonAPIKeyRefused))
	g.Expect(keyStatus(t, short)).To(Equal(http.StatusUnauthorized), "the short key authenticates")
	g.Expect(keyStatus(t, o.key)).To(Equal(http.StatusNotFound), "the organization's long key stopped working")
}
