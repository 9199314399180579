package main

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/app"
)

// Webhook flags default to the one definition of their defaults, and a
// zero that means nothing is refused, not read as "the default"
// (--webhook-timeout=0 used to become 10 s).
func TestWebhookFlags(t *testing.T) {
	parse := func(args ...string) (app.WebhookOptions, error) {
		o := app.DefaultWebhookOptions
		fs := flag.NewFlagSet("switchboard", flag.ContinueOnError)
		o.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return o, o.Validate()
	}
	o, err := parse()
	if err != nil || o.Timeout != 10*time.Second || o.MaxConcurrent != 128 || o.Schedule.String() != app.DefaultWebhookOptions.Schedule.String() {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	if o, err = parse("--webhook-timeout=3s", "--webhook-disable-after=-1s", "--max-concurrent-deliveries-per-endpoint=-1"); err != nil ||
		o.Timeout != 3*time.Second || o.DisableAfter >= 0 || o.MaxConcurrentPerEndpoint != -1 {
		t.Fatalf("set: %+v %v", o, err)
	}
	for _, zero := range []string{"webhook-timeout=0", "webhook-delivery-retention=0", "webhook-rotation-overlap=0",
		"webhook-disable-after=0", "max-concurrent-deliveries=0", "max-concurrent-deliveries-per-organization=0",
		"max-concurrent-deliveries-per-endpoint=0"} {
		name, _, _ := strings.Cut(zero, "=")
		if _, err := parse("--" + zero); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("--%s: %v, want it refused by name", zero, err)
		}
	}
}

// --help shows every flag under its concern: a new flag without a group
// would fall under "Other", which this test refuses (go test's own flags
// aside).
func TestHelpGroupsEveryFlag(t *testing.T) {
	parseFlags()
	var out strings.Builder
	printUsage(&out, flag.CommandLine)
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "test.") { // go test's own
			return
		}
		if groupOf(f.Name) == "" {
			t.Errorf("--%s is in no group of flagGroups (usage.go)", f.Name)
		}
		if !strings.Contains(out.String(), "  --"+f.Name+" ") && !strings.Contains(out.String(), "  --"+f.Name+"\n") {
			t.Errorf("--help does not show --%s", f.Name)
		}
	})
}

// The flags main declares itself refuse a zero that would mean nothing,
// each by name; their defaults pass.
func TestOwnFlagsRefuseZero(t *testing.T) {
	valid := flags{callRetention: time.Hour, apiTimeout: 10 * time.Second, leaderLease: 10 * time.Second,
		maxCalls: 64, qps: 1000, burst: 2000}
	if err := valid.validateOwn(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for name, zero := range map[string]func(*flags){
		"call-retention":              func(f *flags) { f.callRetention = 0 },
		"api-request-timeout":         func(f *flags) { f.apiTimeout = 0 },
		"leader-elect-lease-duration": func(f *flags) { f.leaderLease = 0 },
		"max-concurrent-calls":        func(f *flags) { f.maxCalls = 0 },
		"kube-api-qps":                func(f *flags) { f.qps = 0 },
		"kube-api-burst":              func(f *flags) { f.burst = 0 },
	} {
		f := valid
		zero(&f)
		if err := f.validateOwn(); err == nil || !strings.Contains(err.Error(), "--"+name+" ") {
			t.Errorf("--%s=0: %v, want it refused by name", name, err)
		}
	}
}
