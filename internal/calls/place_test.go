package calls_test

// The behaviour of placing and stopping a call, against controller-runtime's
// fake client with the indexes the manager's cache has: what POST
// /v1/calls, the dashboard's form and POST /v1/calls/{id}/stop rest on.
// The end-to-end tests (internal/app/e2e) check the same through HTTP.

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/numberlists"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

const agentID = "7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f"

// builderIndexer registers the directory's and the quota's indexes on a
// fake client builder, as the manager registers them on its cache.
type builderIndexer struct{ b *fake.ClientBuilder }

func (i builderIndexer) IndexField(_ context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	i.b.WithIndex(obj, field, fn)
	return nil
}

// org is one organization ("acme", with namespace annotations) holding an
// agent that needs the variable customer_name, and a placer over it; funcs
// intercept the client's calls (an apiserver that fails).
type org struct {
	placer  *calls.Placer
	stopper *calls.Stopper
	client  client.Client
	numbers *numberlists.Index
}

func newOrg(t *testing.T, annotations map[string]string, funcs interceptor.Funcs, objs ...client.Object) *org {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{switchboardv1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	agent := &switchboardv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "reminders"},
		Spec: switchboardv1.AgentSpec{ID: agentID, FromNumber: "+14155550100", RequiredVariables: []string{"customer_name"}}}
	objs = append(objs, agent, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "acme", Annotations: annotations}})
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&switchboardv1.Call{}).
		WithIndex(&switchboardv1.Call{}, quota.LivePhaseIndex, quota.LivePhase).
		WithIndex(&switchboardv1.Call{}, directory.CallIDSelectableField, testsupport.SelectableCallID).
		WithInterceptorFuncs(funcs)
	if err := directory.IndexFields(context.Background(), builderIndexer{b}); err != nil {
		t.Fatal(err)
	}
	c := b.Build()
	store, err := history.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	dir := &directory.Directory{Cache: c, Live: c, MissGrace: -1}
	book := &calls.Book{Directory: dir, Live: c, History: store}
	numbers := numberlists.NewIndex()
	return &org{client: c, numbers: numbers, stopper: &calls.Stopper{Book: book, Client: c},
		placer: &calls.Placer{Directory: dir, Book: book, Client: c, Numbers: numbers, Dialer: sim.New(sim.DefaultTimings()),
			Quota: &quota.Admission{Cache: c, Now: time.Now}}}
}

func request(to string) calls.Request {
	return calls.Request{AgentID: agentID, ToNumber: to, Variables: map[string]any{"customer_name": "Ada"},
		RawVars: []byte(`{"customer_name":"Ada"}`), Source: switchboardv1.SourceAPI}
}

// callsIn lists the Calls of the organization.
func (o *org) callsIn(t *testing.T) []switchboardv1.Call {
	t.Helper()
	var list switchboardv1.CallList
	if err := o.client.List(context.Background(), &list, client.InNamespace("acme")); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// A placed call is one Call in the organization, queued with what was
// asked, and the answer names the agent's caller id.
func TestPlaceQueuesOneCall(t *testing.T) {
	o := newOrg(t, nil, interceptor.Funcs{})
	placed, err := o.placer.Place(context.Background(), "acme", request("+14155551234"), "call_00000000000000000000000000000001")
	if err != nil {
		t.Fatal(err)
	}
	if placed.FromNumber != "+14155550100" || callid.Of(placed.Call) != "call_00000000000000000000000000000001" {
		t.Errorf("placed %s from %s", callid.Of(placed.Call), placed.FromNumber)
	}
	got := o.callsIn(t)
	if len(got) != 1 {
		t.Fatalf("%d Calls in the organization, want 1", len(got))
	}
	c := got[0]
	if c.Spec.AgentID != agentID || c.Spec.ToNumber != "+14155551234" || c.Spec.Source != switchboardv1.SourceAPI ||
		string(c.Spec.Variables.Raw) != `{"customer_name":"Ada"}` || c.Annotations[switchboardv1.AcceptedAtAnnotation] == "" {
		t.Errorf("the Call: %+v", c)
	}
	if c.Annotations[switchboardv1.RefusalCodeAnnotation] != "" {
		t.Errorf("a queued call carries a refusal: %v", c.Annotations)
	}
}

// A request sent again with its Idempotency-Key (the same call id), after
// the first created the Call but never answered, gets that call back: one
// Call, never two.
func TestPlaceAgainReturnsTheSameCall(t *testing.T) {
	o := newOrg(t, nil, interceptor.Funcs{})
	id := "call_00000000000000000000000000000002"
	first, err := o.placer.Place(context.Background(), "acme", request("+14155551234"), id)
	if err != nil {
		t.Fatal(err)
	}
	again, err := o.placer.Place(context.Background(), "acme", request("+14155551234"), id)
	if err != nil {
		t.Fatal(err)
	}
	if again.Call.UID != first.Call.UID || len(o.callsIn(t)) != 1 {
		t.Fatalf("placed twice: %s then %s, %d Calls", first.Call.UID, again.Call.UID, len(o.callsIn(t)))
	}
}

// Refusals: what is refused leaves nothing behind, except the two a
// customer must be able to look up later (a blocked number, a carrier that
// refused), which leave one failed call record carrying why.
func TestPlaceRefusals(t *testing.T) {
	for _, tt := range []struct {
		name       string
		req        func(calls.Request) calls.Request
		list       switchboardv1.NumberListType
		want       func(error) bool
		wantRecord string // refusal code of the failed call record; "" for no record
	}{
		{name: "unknown agent", req: func(r calls.Request) calls.Request { r.AgentID = "00000000-0000-4000-8000-000000000000"; return r },
			want: is[*calls.AgentUnknown]},
		{name: "missing variable", req: func(r calls.Request) calls.Request { r.Variables = map[string]any{}; return r },
			want: refusedWith(callpolicy.CodeMissingVariables)},
		{name: "do not call", list: switchboardv1.DoNotCall, want: refusedWith(callpolicy.CodeDNCBlocked), wantRecord: callpolicy.CodeDNCBlocked},
		{name: "blocked", list: switchboardv1.Blocked, want: refusedWith(callpolicy.CodeNumberBlocked), wantRecord: callpolicy.CodeNumberBlocked},
		{name: "carrier refuses", req: func(r calls.Request) calls.Request { r.ToNumber = "+14155550008"; return r },
			want: is[*calls.DispatchFailed], wantRecord: telephony.CodeDispatchError},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newOrg(t, nil, interceptor.Funcs{})
			req := request("+14155551234")
			if tt.req != nil {
				req = tt.req(req)
			}
			if tt.list != "" {
				o.numbers.Set("acme", "list", tt.list, []string{req.ToNumber}, nil)
			}
			_, err := o.placer.Place(context.Background(), "acme", req, "call_00000000000000000000000000000003")
			if !tt.want(err) {
				t.Fatalf("Place: %v (%T)", err, err)
			}
			got := o.callsIn(t)
			if tt.wantRecord == "" {
				if len(got) != 0 {
					t.Fatalf("a refused call left %d Calls", len(got))
				}
				return
			}
			if len(got) != 1 || got[0].Annotations[switchboardv1.RefusalCodeAnnotation] != tt.wantRecord ||
				got[0].Annotations[switchboardv1.RefusalMessageAnnotation] == "" {
				t.Fatalf("want one failed call record %s, got %+v", tt.wantRecord, got)
			}
			if id := recordedID(err); id != "call_00000000000000000000000000000003" {
				t.Errorf("the error names call %q, want the recorded one", id)
			}
		})
	}
}

func is[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

func refusedWith(code string) func(error) bool {
	return func(err error) bool {
		var r *calls.Refused
		return errors.As(err, &r) && r.Rejection.Code == code
	}
}

func recordedID(err error) string {
	var r *calls.Refused
	var d *calls.DispatchFailed
	switch {
	case errors.As(err, &r):
		return r.CallID
	case errors.As(err, &d):
		return d.CallID
	}
	return ""
}

// The organization's active-calls limit counts placed calls only: a call
// refused after admission gives its place back, so the next one is placed.
func TestPlaceWithinTheOrganizationsLimit(t *testing.T) {
	o := newOrg(t, map[string]string{quota.ActiveCallsAnnotation: "1"}, interceptor.Funcs{})
	refused := request("+14155551234")
	refused.Variables = map[string]any{}
	if _, err := o.placer.Place(context.Background(), "acme", refused, "call_00000000000000000000000000000004"); !is[*calls.Refused](err) {
		t.Fatalf("refused call: %v", err)
	}
	if _, err := o.placer.Place(context.Background(), "acme", request("+14155551234"), "call_00000000000000000000000000000005"); err != nil {
		t.Fatalf("the first call placed after a refusal: %v", err)
	}
	_, err := o.placer.Place(context.Background(), "acme", request("+14155551235"), "call_00000000000000000000000000000006")
	if exceeded := (*quota.Exceeded)(nil); !errors.As(err, &exceeded) {
		t.Fatalf("a second live call over a limit of 1: %v, want *quota.Exceeded", err)
	}
	if n := len(o.callsIn(t)); n != 1 {
		t.Fatalf("%d Calls, want the one placed", n)
	}
}

// An apiserver that refuses the create outright is safe to retry; one
// whose answer never came may have created the Call, and the caller is
// told to retry with the same Idempotency-Key.
func TestPlaceWhenTheAPIServerFails(t *testing.T) {
	gr := schema.GroupResource{Group: "switchboard.dev", Resource: "calls"}
	for _, tt := range []struct {
		name      string
		err       error
		uncertain bool
	}{
		{"refused", apierrors.NewForbidden(gr, "", errors.New("denied by policy")), false},
		{"timeout", apierrors.NewTimeoutError("the apiserver did not answer", 1), true},
		{"connection lost", errors.New("http2: client connection lost"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newOrg(t, nil, interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return tt.err
			}})
			_, err := o.placer.Place(context.Background(), "acme", request("+14155551234"), "call_00000000000000000000000000000007")
			var u *calls.Unavailable
			if !errors.As(err, &u) || u.Uncertain != tt.uncertain {
				t.Fatalf("Place: %v, want *Unavailable with Uncertain %v", err, tt.uncertain)
			}
		})
	}
}

// Stopping sets the Call's spec.stop with the time it was asked (what
// decides a race with the call's natural end); asking again changes
// nothing; a final or unknown call cannot be stopped.
func TestStop(t *testing.T) {
	live := func(name string, phase switchboardv1.CallPhase) *switchboardv1.Call {
		c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: name}}
		c.Status.Phase = phase
		return c
	}
	talking, ended := live("call-00000000000000000000000000000008", switchboardv1.CallInProgress), live("call-00000000000000000000000000000009", switchboardv1.CallEnded)
	o := newOrg(t, nil, interceptor.Funcs{}, talking, ended)
	ctx := context.Background()

	c, err := o.stopper.Stop(ctx, "acme", callid.Of(talking))
	if err != nil {
		t.Fatal(err)
	}
	asked := c.Annotations[switchboardv1.StopRequestedAtAnnotation]
	var stored switchboardv1.Call
	if err := o.client.Get(ctx, client.ObjectKeyFromObject(talking), &stored); err != nil {
		t.Fatal(err)
	}
	if !stored.Spec.Stop || stored.Annotations[switchboardv1.StopRequestedAtAnnotation] != asked || asked == "" {
		t.Fatalf("after Stop: stop=%v, asked at %q", stored.Spec.Stop, stored.Annotations[switchboardv1.StopRequestedAtAnnotation])
	}
	if again, err := o.stopper.Stop(ctx, "acme", callid.Of(talking)); err != nil || again.Annotations[switchboardv1.StopRequestedAtAnnotation] != asked {
		t.Errorf("second Stop: %v, asked at %q (want the first's %q)", err, again.Annotations[switchboardv1.StopRequestedAtAnnotation], asked)
	}
	if _, err := o.stopper.Stop(ctx, "acme", callid.Of(ended)); !errors.Is(err, calls.ErrNotActive) {
		t.Errorf("stopping an ended call: %v, want ErrNotActive", err)
	}
	if _, err := o.stopper.Stop(ctx, "acme", "call_0000000000000000000000000000000a"); !errors.Is(err, calls.ErrNotFound) {
		t.Errorf("stopping an unknown call: %v, want ErrNotFound", err)
	}
}

// A Call deleted between the read and the patch (it ended and left the
// cluster) is not active: nothing to stop, no error the caller must retry.
func TestStopRacingTheCallsDeletion(t *testing.T) {
	talking := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "call-0000000000000000000000000000000b"}}
	talking.Status.Phase = switchboardv1.CallInProgress
	gr := schema.GroupResource{Group: "switchboard.dev", Resource: "calls"}
	o := newOrg(t, nil, interceptor.Funcs{Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
		return apierrors.NewNotFound(gr, talking.Name)
	}}, talking)
	if _, err := o.stopper.Stop(context.Background(), "acme", callid.Of(talking)); !errors.Is(err, calls.ErrNotActive) {
		t.Fatalf("Stop: %v, want ErrNotActive", err)
	}
}

// gateOf is a placement gate that admits or not, and counts who entered.
type gateOf struct {
	admit   bool
	entered []string
}

func (g *gateOf) Enter(_ context.Context, org string) (func(), bool) {
	g.entered = append(g.entered, org)
	return func() {}, g.admit
}

// The organization's limits come before the replica's room: a call over
// them is refused by them, never reaching the gate; a call the gate
// refuses is Busy and creates nothing.
func TestPlaceConsultsTheGateAfterTheLimits(t *testing.T) {
	o := newOrg(t, map[string]string{quota.CreateRateAnnotation: "0.001", quota.CreateBurstAnnotation: "2"}, interceptor.Funcs{})
	busy := &gateOf{}
	o.placer.Gate = busy
	_, err := o.placer.Place(context.Background(), "acme", request("+14155551234"), callid.New())
	var refused *calls.Busy
	if !errors.As(err, &refused) || refused.RetryAfter <= 0 {
		t.Fatalf("with the gate full: %v, want Busy with a Retry-After", err)
	}
	if n := len(o.callsIn(t)); n != 0 {
		t.Fatalf("a call the gate refused created %d Calls", n)
	}

	open := &gateOf{admit: true}
	o.placer.Gate = open
	if _, err := o.placer.Place(context.Background(), "acme", request("+14155551234"), callid.New()); err != nil {
		t.Fatalf("the retry: %v, want the call placed", err)
	}
	_, err = o.placer.Place(context.Background(), "acme", request("+14155551235"), callid.New())
	var exceeded *quota.Exceeded
	if !errors.As(err, &exceeded) || exceeded.Code != quota.CodeRateLimited {
		t.Fatalf("past the burst of 2: %v, want rate_limited", err)
	}
	if len(open.entered) != 1 {
		t.Fatalf("the gate was consulted %d times, want once: a call over the organization's limits never reaches it", len(open.entered))
	}
}
