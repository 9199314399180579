package quota

// The behaviour of Admission, against controller-runtime's fake client
// with the live-phase index: what the REST API's 429s rest on. The
// end-to-end tests (internal/app/e2e, TestCreateRateLimit and
// TestActiveCallsLimit) check the same limits through HTTP.

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// newAdmission serves the organizations "acme" (annotated) and "globex"
// (defaults: unlimited), holding calls.
func newAdmission(t *testing.T, annotations map[string]string, calls ...*switchboardv1.Call) (*Admission, *clocktesting.FakePassiveClock, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := switchboardv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "acme", Annotations: annotations}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "globex"}},
	}
	for _, c := range calls {
		objs = append(objs, c)
	}
	cache := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&switchboardv1.Call{}, LivePhaseIndex, LivePhase).
		WithObjects(objs...).WithStatusSubresource(&switchboardv1.Call{}).Build()
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC))
	return &Admission{Cache: cache, Now: clk.Now}, clk, cache
}

func call(name string, phase switchboardv1.CallPhase, created time.Time) *switchboardv1.Call {
	c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: name, UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(created)}}
	c.Status.Phase = phase
	return c
}

// exceeded is the code of the *Exceeded err holds, "" for none.
func exceeded(t *testing.T, err error) (*Exceeded, string) {
	t.Helper()
	var e *Exceeded
	if err == nil {
		return nil, ""
	}
	if !errors.As(err, &e) {
		t.Fatalf("admission failed: %v", err)
	}
	return e, e.Code
}

// An organization's create rate admits its burst, refuses the next call
// with a Retry-After within the rate's period, admits again once time has
// refilled it, and holds no other organization back.
func TestCreateRatePerOrganization(t *testing.T) {
	a, clk, _ := newAdmission(t, map[string]string{CreateRateAnnotation: "0.2", CreateBurstAnnotation: "2"})
	ctx := context.Background()
	for i := range 2 {
		if _, err := a.Admit(ctx, "acme"); err != nil {
			t.Fatalf("call %d of the burst: %v", i+1, err)
		}
	}
	_, err := a.Admit(ctx, "acme")
	if e, code := exceeded(t, err); code != CodeRateLimited || e.RetryAfter <= 0 || e.RetryAfter > 5*time.Second {
		t.Fatalf("third call: %v, want rate_limited with a Retry-After of at most 5 s", err)
	}
	for range 5 {
		if _, err := a.Admit(ctx, "globex"); err != nil {
			t.Fatalf("another organization held back: %v", err)
		}
	}
	clk.SetTime(clk.Now().Add(5 * time.Second))
	if _, err := a.Admit(ctx, "acme"); err != nil {
		t.Fatalf("after 5 s (one call at 0.2/s): %v", err)
	}
}

// Calls admitted count toward the active-calls limit before the cache
// shows them (a burst cannot slip past it), a released admission gives its
// place back, and a call the cache shows ended frees its place.
func TestActiveCallsCountAdmittedCalls(t *testing.T) {
	a, _, cache := newAdmission(t, map[string]string{ActiveCallsAnnotation: "2"})
	ctx := context.Background()
	first, err := a.Admit(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	first.Placed("call-1") // created; the cache has not seen it yet
	second, err := a.Admit(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Admit(ctx, "acme")
	if _, code := exceeded(t, err); code != CodeConcurrencyLimit {
		t.Fatalf("third call with two admitted: %v, want concurrency_limit_reached", err)
	}
	second.Release() // its create failed: nothing counts
	third, err := a.Admit(ctx, "acme")
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	third.Placed("call-3")
	// The cache now shows the first call ended and the third queued.
	created := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	for _, c := range []*switchboardv1.Call{call("call-1", switchboardv1.CallEnded, created), call("call-3", switchboardv1.CallQueued, created)} {
		if err := cache.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	u, err := a.Usage(ctx, "acme")
	if err != nil || u.Queued+u.Live != 1 {
		t.Fatalf("usage = %+v %v, want one active call", u, err)
	}
	if _, err := a.Admit(ctx, "acme"); err != nil {
		t.Fatalf("with one active call of two: %v", err)
	}
}

// A Call applied with kubectl is within the active-calls limit when fewer
// than the limit of the organization's active calls are older than it.
func TestAdmitAppliedKeepsTheOldest(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	older := call("call-1", switchboardv1.CallInProgress, t0)
	newer := call("call-2", switchboardv1.CallQueued, t0.Add(time.Second))
	a, _, _ := newAdmission(t, map[string]string{ActiveCallsAnnotation: "1"}, older, newer)
	ctx := context.Background()
	if e, err := a.AdmitApplied(ctx, older); err != nil || e != nil {
		t.Fatalf("the oldest call: %v %v, want admitted", e, err)
	}
	if e, err := a.AdmitApplied(ctx, newer); err != nil || e == nil || e.Code != CodeConcurrencyLimit {
		t.Fatalf("the newer call: %v %v, want concurrency_limit_reached", e, err)
	}
}
