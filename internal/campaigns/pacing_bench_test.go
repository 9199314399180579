package campaigns

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// pacingBenchEnv sets how long BenchmarkPacing runs (a Go duration).
const pacingBenchEnv = "SWITCHBOARD_PACING_BENCH"

// BenchmarkPacing runs the runner in real time against a carrier whose
// calls end at once, at 20 calls a second (1,200 a minute), and reports
// the rate it held and the worst second: the runner's own accuracy, with
// the carrier out of the way.
func BenchmarkPacing(b *testing.B) {
	run := 30 * time.Second
	if v := os.Getenv(pacingBenchEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		run = d
	}
	const perMinute = 1200
	ctx := context.Background()
	store, err := history.Open(ctx, "sqlite:"+b.TempDir()+"/history.db")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = store.Close() }()
	n := int(run.Seconds()*perMinute/60) * 2
	in := make([]ContactInput, n)
	for i := range in {
		in[i] = ContactInput{ToNumber: fmt.Sprintf("+1212%07d", 2_000_000+i), Timezone: "UTC"}
	}
	prepared, _ := Prepare(in, "", 0, time.Now())
	if _, err := store.AddContacts(ctx, "org", "pace", prepared.Contacts, time.Now()); err != nil {
		b.Fatal(err)
	}
	campaign := &switchboardv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: "pace", UID: "u"},
		Spec: switchboardv1.CampaignSpec{AgentID: "a2a2a2a2-0000-0000-0000-000000000000",
			CallingWindow: switchboardv1.CallingWindow{Start: "00:00", End: "24:00"},
			Pacing:        switchboardv1.CampaignPacing{CallsPerMinute: perMinute, MaxConcurrent: 1000}},
		Status: switchboardv1.CampaignStatus{State: switchboardv1.CampaignRunning}}
	scheme := runtime.NewScheme()
	_ = switchboardv1.AddToScheme(scheme)
	real := clock.RealClock{}
	cr := &carrier{clock: nil, placed: map[string]placedCall{}, now: real.Now}
	r := &Runner{Cache: fake.NewClientBuilder().WithScheme(scheme).WithObjects(campaign).Build(), Contacts: store,
		Calls: cr, Placer: cr, Limits: noLimits{}, Clock: real, Log: logr.Discard()}
	for b.Loop() {
		runCtx, cancel := context.WithTimeout(ctx, run)
		start := time.Now()
		_ = r.Start(runCtx)
		cancel()
		reportPacing(b, cr, start, run, perMinute)
	}
}

func reportPacing(b *testing.B, cr *carrier, start time.Time, run time.Duration, perMinute int) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	perSecond := make([]int, int(run.Seconds())+1)
	for _, p := range cr.placed {
		if s := int(p.at.Sub(start).Seconds()); s >= 0 && s < len(perSecond) {
			perSecond[s]++
		}
	}
	want := float64(perMinute) / 60
	// The first second holds the bucket's initial burst; the last is cut.
	steady, worst := 0, 0.0
	for _, n := range perSecond[1 : len(perSecond)-1] {
		steady += n
		worst = max(worst, abs(float64(n)-want)/want)
	}
	rate := float64(steady) / float64(len(perSecond)-2)
	b.ReportMetric(rate, "calls/s")
	b.ReportMetric(100*abs(rate-want)/want, "rate-error-%")
	b.ReportMetric(100*worst, "worst-second-error-%")
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
