package controllers_test

// The Registered condition of a SIPTrunk with spec.registration, through
// the reconciler and the registration loops (registration.Manager). A fake
// binding stands in for the registrar, which the loops meet for real (a
// kamailio registrar) in internal/telephony/sip/registration.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/registration"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// fakeRegistrar accepts the password "secret" and grants an hour; it
// counts the un-REGISTERs of each address of record.
type fakeRegistrar struct {
	mu      sync.Mutex
	removed map[string]int
}

var registrar = &fakeRegistrar{removed: map[string]int{}}

func (f *fakeRegistrar) Bind(t engine.Trunk, r engine.Registration) registration.Binding {
	return fakeBinding{f: f, trunk: t, reg: r}
}

func (f *fakeRegistrar) unregistered(aor string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.removed[aor]
}

type fakeBinding struct {
	f     *fakeRegistrar
	trunk engine.Trunk
	reg   engine.Registration
}

func (b fakeBinding) Register(context.Context) engine.RegisterResult {
	if b.trunk.Password != "secret" {
		return engine.RegisterResult{Reachable: true, AuthFailed: true, StatusCode: 401, Reason: "Unauthorized",
			Err: errors.New("the registrar refused the credentials (401 Unauthorized)")}
	}
	return engine.RegisterResult{Reachable: true, StatusCode: 200, Reason: "OK", Granted: b.reg.Expires}
}

func (b fakeBinding) Unregister(context.Context) engine.RegisterResult {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	b.f.removed[b.reg.User+"@"+b.reg.Registrar]++
	return engine.RegisterResult{Reachable: true, StatusCode: 200, Reason: "OK"}
}

// trunkStatus reads tr's status once the reconciler caught up with its spec.
func trunkStatus(tr *switchboardv1.SIPTrunk) func(Gomega) switchboardv1.SIPTrunkStatus {
	return func(g Gomega) switchboardv1.SIPTrunkStatus {
		var cur switchboardv1.SIPTrunk
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(tr), &cur)).To(Succeed())
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		return cur.Status
	}
}

func registered(s switchboardv1.SIPTrunkStatus) *metav1.Condition {
	return apimeta.FindStatusCondition(s.Conditions, switchboardv1.RegisteredCondition)
}

func enableRegistration(t *testing.T, tr *switchboardv1.SIPTrunk, reg *switchboardv1.SIPRegistration) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		var cur switchboardv1.SIPTrunk
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(tr), &cur); err != nil {
			return err
		}
		cur.Spec.Registration = reg
		return k8s.Update(context.Background(), &cur)
	}, resWait, resPoll).Should(Succeed())
}

// A trunk registers with its credentials: Registered True with the time
// the binding holds until; a wrong password is AuthenticationFailed; turned
// off, the condition goes and the binding is removed.
func TestSIPTrunkRegistered(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newOrganization(t)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "carrier-credentials"},
		Data: map[string][]byte{switchboardv1.SIPUsernameKey: []byte("acme"), switchboardv1.SIPPasswordKey: []byte("secret")}}
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	tr := testsupport.CreateTrunk(t, k8s, ns, "carrier", "sip:carrier.example.com:5060", s.Name)
	enableRegistration(t, tr, &switchboardv1.SIPRegistration{})

	g.Eventually(func(g Gomega) {
		st := trunkStatus(tr)(g)
		c := registered(st)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(switchboardv1.ReasonRegistered))
		g.Expect(c.Message).To(ContainSubstring("200 OK"))
		g.Expect(st.LastRegisteredAt).NotTo(BeNil())
		g.Expect(st.RegisteredUntil).NotTo(BeNil())
		// The default expiresSeconds, granted in full by the fake.
		g.Expect(st.RegisteredUntil.Sub(st.LastRegisteredAt.Time)).To(BeNumerically("~", time.Hour, time.Second))
	}, resWait, resPoll).Should(Succeed())

	s.Data[switchboardv1.SIPPasswordKey] = []byte("guess")
	g.Expect(k8s.Update(ctx, s)).To(Succeed())
	g.Eventually(func(g Gomega) {
		st := trunkStatus(tr)(g)
		c := registered(st)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(switchboardv1.ReasonAuthenticationFailed))
		g.Expect(c.Message).To(ContainSubstring("401"))
		g.Expect(c.Message).NotTo(ContainSubstring("guess"))
		g.Expect(st.RegisteredUntil).To(BeNil())
	}, resWait, resPoll).Should(Succeed())

	s.Data[switchboardv1.SIPPasswordKey] = []byte("secret")
	g.Expect(k8s.Update(ctx, s)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		if c := registered(trunkStatus(tr)(g)); c != nil {
			return c.Reason
		}
		return ""
	}, resWait, resPoll).Should(Equal(switchboardv1.ReasonRegistered))

	aor := "acme@sip:carrier.example.com:5060"
	enableRegistration(t, tr, nil)
	g.Eventually(func(g Gomega) {
		st := trunkStatus(tr)(g)
		g.Expect(registered(st)).To(BeNil())
		g.Expect(st.RegisteredUntil).To(BeNil())
	}, resWait, resPoll).Should(Succeed())
	g.Eventually(func() int { return registrar.unregistered(aor) }, resWait, resPoll).Should(Equal(1))
}

// Deleting a registered trunk removes its binding, at the registrar and
// address of record it names.
func TestSIPTrunkUnregisteredOnDeletion(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newOrganization(t)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pbx-credentials"},
		Data: map[string][]byte{switchboardv1.SIPUsernameKey: []byte("acme"), switchboardv1.SIPPasswordKey: []byte("secret")}}
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	tr := testsupport.CreateTrunk(t, k8s, ns, "pbx", "sip:pbx.example.com", s.Name)
	enableRegistration(t, tr, &switchboardv1.SIPRegistration{User: "office", Registrar: "sip:registrar.example.com"})
	g.Eventually(func(g Gomega) *metav1.Condition {
		return registered(trunkStatus(tr)(g))
	}, resWait, resPoll).Should(And(Not(BeNil()), HaveField("Reason", switchboardv1.ReasonRegistered)))

	g.Expect(k8s.Delete(ctx, tr)).To(Succeed())
	g.Eventually(func() int { return registrar.unregistered("office@sip:registrar.example.com") },
		resWait, resPoll).Should(Equal(1))
}

// spec.registration needs a user: from the credentials or its own field.
func TestSIPTrunkRegistrationNeedsAUser(t *testing.T) {
	suite.Need(t)
	ns := newOrganization(t)
	tr := &switchboardv1.SIPTrunk{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "anonymous"},
		Spec: switchboardv1.SIPTrunkSpec{Address: "sip:carrier.example.com",
			Registration: &switchboardv1.SIPRegistration{}}}
	err := k8s.Create(context.Background(), tr)
	if err == nil || !strings.Contains(err.Error(), "spec.registration needs a user") {
		t.Fatalf("create: %v, want the rule's message", err)
	}
}
