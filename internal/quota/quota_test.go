package quota

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func TestLimitsOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		defaults    Limits
		annotations map[string]string
		want        Limits
	}{
		{"no defaults, no annotations: unlimited", Limits{}, nil, Limits{}},
		{"the defaults without annotations", Defaults, nil, Defaults},
		{"a rate gets a burst of twice it", Limits{}, map[string]string{CreateRateAnnotation: "5"}, Limits{CreateRate: 5, CreateBurst: 10}},
		{"an annotated rate replaces the default burst too", Defaults, map[string]string{CreateRateAnnotation: "5"},
			Limits{CreateRate: 5, CreateBurst: 10, ActiveCalls: 500, WebhookEndpoints: 20}},
		{"a slow rate bursts one", Limits{}, map[string]string{CreateRateAnnotation: "0.2"}, Limits{CreateRate: 0.2, CreateBurst: 1}},
		{"an explicit burst", Limits{}, map[string]string{CreateRateAnnotation: "5", CreateBurstAnnotation: "3"}, Limits{CreateRate: 5, CreateBurst: 3}},
		{"a burst on the default rate", Defaults, map[string]string{CreateBurstAnnotation: "3"},
			Limits{CreateRate: 20, CreateBurst: 3, ActiveCalls: 500, WebhookEndpoints: 20}},
		{"a burst alone limits nothing", Limits{}, map[string]string{CreateBurstAnnotation: "3"}, Limits{}},
		{"active calls", Limits{}, map[string]string{ActiveCallsAnnotation: "20"}, Limits{ActiveCalls: 20}},
		{"webhook endpoints", Defaults, map[string]string{WebhookEndpointsAnnotation: "100"},
			Limits{CreateRate: 20, CreateBurst: 40, ActiveCalls: 500, WebhookEndpoints: 100}},
		{"unlimited lifts each default", Defaults, map[string]string{CreateRateAnnotation: "unlimited",
			ActiveCallsAnnotation: "unlimited", WebhookEndpointsAnnotation: "unlimited"}, Limits{}},
		{"invalid values are ignored", Defaults, map[string]string{CreateRateAnnotation: "fast", ActiveCallsAnnotation: "-1",
			CreateBurstAnnotation: "x", WebhookEndpointsAnnotation: "0"}, Defaults},
		{"recording storage", Limits{RecordingStorage: 1 << 30}, map[string]string{RecordingStorageAnnotation: "50Gi"},
			Limits{RecordingStorage: 50 << 30}},
		{"recording storage unlimited", Limits{RecordingStorage: 1 << 30}, map[string]string{RecordingStorageAnnotation: "unlimited"},
			Limits{}},
		{"an invalid recording storage is ignored", Limits{RecordingStorage: 1 << 30},
			map[string]string{RecordingStorageAnnotation: "lots"}, Limits{RecordingStorage: 1 << 30}},
		{"infinity is not a rate", Limits{}, map[string]string{CreateRateAnnotation: "+Inf", ActiveCallsAnnotation: "0"}, Limits{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := limitsOf(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}}, tc.defaults)
			if got != tc.want {
				t.Errorf("limits = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWithinEndpointLimitKeepsTheOldest(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var eps []switchboardv1.WebhookEndpoint
	for i, at := range []int{5, 1, 3, 1, 4} { // seconds after base; two created in the same second
		eps = append(eps, switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("ep-%d", i), CreationTimestamp: metav1.NewTime(base.Add(time.Duration(at) * time.Second))}})
	}
	var names []string
	for _, ep := range WithinEndpointLimit(eps, 3) {
		names = append(names, ep.Name)
	}
	if fmt.Sprint(names) != "[ep-1 ep-3 ep-2]" {
		t.Errorf("within the limit of 3: %v, want the three oldest, ties by name: [ep-1 ep-3 ep-2]", names)
	}
	if got := WithinEndpointLimit(eps, 0); len(got) != len(eps) {
		t.Errorf("no limit kept %d of %d", len(got), len(eps))
	}
}

// A call answered between the two index lookups (queued, then in
// progress) is found by both; it counts once.
func TestUsageCountsACallChangingPhaseOnce(t *testing.T) {
	a := &Admission{Cache: answeringCache{}, Now: time.Now}
	u, err := a.Usage(context.Background(), "org")
	if err != nil {
		t.Fatal(err)
	}
	if u.Queued+u.Live != 1 {
		t.Fatalf("usage = %d queued + %d live, want the one call once", u.Queued, u.Live)
	}
}

// answeringCache holds one organization with one call, which each lookup
// of the live-phase index finds in the phase it asks for: the call moves
// from queued to in progress between the lookups.
type answeringCache struct{}

func (answeringCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if ns, ok := obj.(*corev1.Namespace); ok && key.Name == "org" {
		ns.Name = "org"
		return nil
	}
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}

func (answeringCache) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	phase, _ := lo.FieldSelector.RequiresExactMatch(LivePhaseIndex)
	call := switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: "moving", UID: "uid-1"}}
	call.Status.Phase = switchboardv1.CallPhase(phase)
	list.(*switchboardv1.CallList).Items = []switchboardv1.Call{call}
	return nil
}

// An organization may store recordings until they reach its quota; the
// refusal says both figures.
func TestRecordingStorage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		quota  int64
		stored int64
		over   bool
	}{
		{"unlimited", 0, 1 << 40, false},
		{"under", 1 << 30, 1<<30 - 1, false},
		{"at", 1 << 30, 1 << 30, true},
		{"over", 1 << 30, 3 << 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := RecordingStorage{
				Limits: func(context.Context, string) (Limits, error) { return Limits{RecordingStorage: tc.quota}, nil },
				Stored: func(_ context.Context, ns string) (int64, error) { return tc.stored, nil },
			}
			over, err := r.Check(context.Background(), "acme")
			if err != nil || (over != nil) != tc.over {
				t.Fatalf("Check = %v, %v; want over %v", over, err, tc.over)
			}
			if over != nil && (over.Code != CodeRecordingStorage || !strings.Contains(over.Message, "quota is 1Gi")) {
				t.Fatalf("refusal %+v", over)
			}
		})
	}
}
