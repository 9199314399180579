package campaigns

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/quota"
)

// carrier places calls that end answered at once, and remembers when.
type carrier struct {
	clock  *clocktesting.FakeClock
	mu     sync.Mutex
	placed map[string]placedCall // by call id
	// now, when set, is the time instead of clock's.
	now func() time.Time
}

type placedCall struct {
	number string
	at     time.Time
}

func (c *carrier) Place(_ context.Context, ns string, req calls.Request, callID string) (*calls.Placed, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.placed[callID]; !ok {
		var at time.Time
		if c.now != nil {
			at = c.now()
		} else {
			at = c.clock.Now()
		}
		c.placed[callID] = placedCall{number: req.ToNumber, at: at}
	}
	return &calls.Placed{Call: &switchboardv1.Call{}}, nil
}

func (c *carrier) Get(_ context.Context, _, id string) (*switchboardv1.Call, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.placed[id]; !ok {
		return nil, calls.ErrNotFound
	}
	return &switchboardv1.Call{Status: switchboardv1.CallStatus{CallID: id, Phase: switchboardv1.CallEnded,
		Disposition: switchboardv1.DispositionAnswered}}, nil
}

type noLimits struct{}

func (noLimits) Limits(context.Context, string) (quota.Limits, error) { return quota.Limits{}, nil }

// Contacts in New York, Los Angeles, Honolulu, Sydney, one whose number
// maps to many zones (toll-free, Guam to Adak) and one whose zone is
// given: over two days of an injected clock, each is dialed once, inside
// 08:00-21:00 of every one of its zones, and the store says how many wait
// and when the first opens.
func TestRunnerKeepsCallingWindows(t *testing.T) {
	ctx := context.Background()
	store, err := history.Open(ctx, "sqlite::memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	// Monday 09:00 UTC: 04:00 in New York, 01:00 in Los Angeles, Sunday
	// 23:00 in Honolulu, 20:00 in Sydney, 23:00 in Adak.
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(start)
	in := []ContactInput{{ToNumber: "+12125550100"}, {ToNumber: "+13105550100"}, {ToNumber: "+18085550100"},
		{ToNumber: "+61255550100"}, {ToNumber: "+18005550100"}, {ToNumber: "+12125550199", Timezone: "Asia/Tokyo"}}
	prepared, invalid := Prepare(in, "", 0, start)
	if len(invalid) > 0 {
		t.Fatal(invalid)
	}
	if _, err := store.AddContacts(ctx, "org", "c1", prepared.Contacts, start); err != nil {
		t.Fatal(err)
	}
	campaign := &switchboardv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: "c1", UID: "u1"},
		Spec: switchboardv1.CampaignSpec{AgentID: "a2a2a2a2-0000-0000-0000-000000000000",
			Pacing: switchboardv1.CampaignPacing{CallsPerMinute: 60, MaxConcurrent: 10}},
		Status: switchboardv1.CampaignStatus{State: switchboardv1.CampaignRunning}}
	scheme := runtime.NewScheme()
	_ = switchboardv1.AddToScheme(scheme)
	cr := &carrier{clock: clock, placed: map[string]placedCall{}}
	r := &Runner{Cache: fake.NewClientBuilder().WithScheme(scheme).WithObjects(campaign).Build(), Contacts: store,
		Calls: cr, Placer: cr, Limits: noLimits{}, Clock: clock, Log: logr.Discard()}

	if err := r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	counts, err := store.CountContacts(ctx, "org", "c1", clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	// Sydney and Tokyo (18:00) are open; the others wait, New York first.
	if counts.Waiting != 4 || !counts.NextDue.Equal(time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)) {
		t.Fatalf("after the first pass: %d waiting until %v; want 4 until 13:00 UTC (08:00 in New York)",
			counts.Waiting, counts.NextDue)
	}
	// Each waiting group says when it opens: 08:00 in its zone, or in the
	// last of a toll-free number's zones to open.
	want := []struct {
		zones string
		at    time.Time
	}{
		{"[America/New_York]", time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)},
		{"[America/Los_Angeles]", time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)},
		{"[Pacific/Honolulu]", time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)},
	}
	groups := counts.WaitingGroups
	if len(groups) != 4 || len(groups[3].Zones) < 2 || groups[3].Count != 1 {
		t.Fatalf("waiting groups %+v; want New York, Los Angeles, Honolulu, then the toll-free number's zones", groups)
	}
	for i, w := range want {
		if fmt.Sprint(groups[i].Zones) != w.zones || groups[i].Count != 1 || !groups[i].NextDue.Equal(w.at) {
			t.Errorf("waiting group %d = %+v; want %s, 1, at %v", i, groups[i], w.zones, w.at)
		}
	}
	for clock.Now().Before(start.Add(48 * time.Hour)) {
		clock.Step(5 * time.Minute)
		if err := r.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	window, _ := WindowOf(switchboardv1.CallingWindow{})
	dialed := map[string]int{}
	for _, p := range cr.placed {
		dialed[p.number]++
		zones, _ := ZonesOf(p.number, timezoneOf(in, p.number))
		for _, z := range locations(zones) {
			local := p.at.In(z)
			tod := time.Duration(local.Hour())*time.Hour + time.Duration(local.Minute())*time.Minute
			if tod < window.Start || tod >= window.End {
				t.Errorf("%s was dialed at %s in %s, outside 08:00-21:00", p.number, local.Format("15:04"), z)
			}
		}
	}
	for _, c := range in {
		if dialed[c.ToNumber] != 1 {
			t.Errorf("%s was dialed %d times; want once", c.ToNumber, dialed[c.ToNumber])
		}
	}
}

func timezoneOf(in []ContactInput, number string) string {
	for _, c := range in {
		if c.ToNumber == number {
			return c.Timezone
		}
	}
	return ""
}
