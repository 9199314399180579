package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/httpapi"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/workers"
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

// Each option group's flags default to its one definition of them, and a
// zero that means nothing is refused by name, while a zero that means
// something (recordings kept forever) is accepted.
func TestOptionGroupsRefuseMeaninglessZero(t *testing.T) {
	type group struct {
		bind     func(*flag.FlagSet)
		validate func() error
	}
	groups := func() []group {
		client, election, retention := app.DefaultClientOptions, app.DefaultLeaderElectionOptions, app.DefaultRetentionOptions
		api, calls := httpapi.DefaultOptions, app.DefaultCallOptions
		worker := workers.DefaultOptions()
		return []group{
			// Validate reads the options when called, after parsing (a
			// method value would copy them before).
			{client.BindFlags, func() error { return client.Validate() }},
			{election.BindFlags, func() error { return election.Validate() }},
			{retention.BindFlags, func() error { return retention.Validate() }},
			{worker.BindFlags, func() error { return worker.Validate() }},
			{api.BindFlags, func() error { return api.Validate() }},
			{calls.BindFlags, func() error { return calls.Validate() }},
		}
	}
	parse := func(args ...string) error {
		var errs []error
		for _, g := range groups() {
			fs := flag.NewFlagSet("switchboard", flag.ContinueOnError)
			g.bind(fs)
			var known []string
			for _, a := range args {
				name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
				if fs.Lookup(name) != nil {
					known = append(known, a)
				}
			}
			if err := fs.Parse(known); err != nil {
				t.Fatal(err)
			}
			errs = append(errs, g.validate())
		}
		return errors.Join(errs...)
	}
	if err := parse(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	if err := parse("--recording-retention=0"); err != nil {
		t.Errorf("--recording-retention=0 (keep forever) refused: %v", err)
	}
	if err := parse("--drain-timeout=0"); err != nil {
		t.Errorf("--drain-timeout=0 (hang up at once) refused: %v", err)
	}
	for _, arg := range []string{"--worker-id=", "--worker-id=Not A Label!", "--worker-lease-duration=1s", "--drain-timeout=-1s"} {
		name, _, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if err := parse(arg); err == nil || !strings.Contains(err.Error(), "--"+name+" ") {
			t.Errorf("%s: %v, want it refused by name", arg, err)
		}
	}
	if err := parse("--recording-retention=-1s"); err == nil || !strings.Contains(err.Error(), "--recording-retention ") {
		t.Errorf("--recording-retention=-1s: %v, want it refused by name", err)
	}
	for _, name := range []string{"call-retention", "api-request-timeout", "leader-elect-lease-duration",
		"max-concurrent-calls", "max-placements-in-flight", "kube-api-qps", "kube-api-burst",
		"max-active-calls-per-replica", "worker-lease-duration"} {
		if err := parse("--" + name + "=0"); err == nil || !strings.Contains(err.Error(), "--"+name+" ") {
			t.Errorf("--%s=0: %v, want it refused by name", name, err)
		}
	}
}

// The recording flags fit together or say what is missing; the S3
// credentials come from the environment only.
func TestRecordingOptions(t *testing.T) {
	env := map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"}
	s3 := func(getenv func(string) string, args ...string) (*recording.S3Config, error) {
		o := recording.DefaultOptions
		fs := flag.NewFlagSet("switchboard", flag.ContinueOnError)
		o.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return o.S3Config(getenv)
	}
	withEnv := func(k string) string { return env[k] }
	if cfg, err := s3(withEnv); cfg != nil || err != nil {
		t.Errorf("default: %v %v, want local files", cfg, err)
	}
	cfg, err := s3(withEnv, "--recording-store=s3", "--s3-endpoint=s3.example.com", "--s3-bucket=calls")
	if err != nil || cfg.Region != recording.DefaultS3Region || !cfg.Secure || cfg.AccessKey != "id" || cfg.SecretKey != "secret" {
		t.Errorf("s3: %+v %v", cfg, err)
	}
	for want, args := range map[string][]string{
		"need --recording-store=s3": {"--s3-bucket=calls"},
		"needs --s3-endpoint":       {"--recording-store=s3", "--s3-bucket=calls"},
		"want local or s3":          {"--recording-store=disk"},
		"AWS_SECRET_ACCESS_KEY":     {"--recording-store=s3", "--s3-endpoint=s3.example.com", "--s3-bucket=calls"},
	} {
		getenv := withEnv
		if want == "AWS_SECRET_ACCESS_KEY" {
			getenv = func(string) string { return "" }
		}
		if _, err := s3(getenv, args...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want an error saying %q", args, err, want)
		}
	}
}

// The recording bounds take sizes: --recording-max-bytes (128Mi by
// default, 0 for none) and --quota-recording-storage (0: unlimited).
func TestRecordingBoundFlags(t *testing.T) {
	parse := func(args ...string) (recording.Options, quota.Limits, error) {
		o, l := recording.DefaultOptions, quota.Defaults
		fs := flag.NewFlagSet("switchboard", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.BindFlags(fs)
		l.BindFlags(fs)
		return o, l, fs.Parse(args)
	}
	o, l, err := parse()
	if err != nil || o.MaxBytes != 128<<20 || l.RecordingStorage != 0 {
		t.Fatalf("defaults: %d, %d, %v; want 128Mi and unlimited", o.MaxBytes, l.RecordingStorage, err)
	}
	o, l, err = parse("--recording-max-bytes=64Mi", "--quota-recording-storage=50Gi")
	if err != nil || o.MaxBytes != 64<<20 || l.RecordingStorage != 50<<30 {
		t.Fatalf("64Mi and 50Gi: %d, %d, %v", o.MaxBytes, l.RecordingStorage, err)
	}
	if o, _, err = parse("--recording-max-bytes=0", "--quota-recording-storage=0"); err != nil || o.MaxBytes != 0 {
		t.Fatalf("0: %d, %v; want no bound", o.MaxBytes, err)
	}
	for _, bad := range [][]string{{"--recording-max-bytes=-1"}, {"--recording-max-bytes=lots"},
		{"--quota-recording-storage=-1Gi"}, {"--quota-recording-storage=lots"}} {
		if _, _, err := parse(bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// The SIP flags of a worker on its own ports and address: a bad port or
// range, or two sources of the announced address, is refused by name.
func TestSIPFlags(t *testing.T) {
	parse := func(args ...string) (app.SIPOptions, error) {
		o := app.DefaultSIPOptions
		fs := flag.NewFlagSet("switchboard", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		return o, o.Validate()
	}
	o, err := parse("--sip-port=5060", "--rtp-ports=20000-20399", "--sip-external-service=switchboard/sb-manager-0")
	if err != nil || o.BindPort != 5060 || o.RTPPorts.Calls() != 200 || o.ExternalService != "switchboard/sb-manager-0" {
		t.Fatalf("set: %+v %v", o, err)
	}
	if o, err = parse(); err != nil || o.BindPort != 0 || o.RTPPorts.Calls() != 0 {
		t.Fatalf("defaults (ephemeral ports): %+v %v", o, err)
	}
	for _, tc := range []struct{ args []string }{
		{[]string{"--sip-port=70000"}},
		{[]string{"--rtp-ports=20001-20400"}},
		{[]string{"--rtp-ports=20000"}},
		{[]string{"--sip-external-service=sb-manager-0"}},
		{[]string{"--sip-external-host=203.0.113.7", "--sip-external-service=switchboard/sb-manager-0"}},
		{[]string{"--sip-external-host=203.0.113.7", "--sip-external-node=node-1"}},
		{[]string{"--sip-external-service=switchboard/sb-manager-0", "--sip-external-node=node-1"}},
	} {
		name, _, _ := strings.Cut(strings.TrimPrefix(tc.args[len(tc.args)-1], "--"), "=")
		if _, err := parse(tc.args...); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: %v, want it refused, naming --%s", tc.args, err, name)
		}
	}
}

// make run (--dev) probes SIP trunks every 15 minutes, not every minute:
// its sample trunk's callee is seldom running. A given interval wins, and
// production keeps the flag's default.
func TestProbeIntervalDefaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dev   bool
		given map[string]bool
		want  time.Duration
	}{
		{name: "production", want: app.DefaultSIPOptions.ProbeInterval},
		{name: "--dev", dev: true, want: 15 * time.Minute},
		{name: "--dev with the flag given", dev: true, given: map[string]bool{"sip-probe-interval": true},
			want: app.DefaultSIPOptions.ProbeInterval},
	} {
		o := defaultOptions()
		o.dev.enabled = tc.dev
		set, err := resolve(o, noEnv, tc.given)
		if err != nil {
			t.Fatal(err)
		}
		if set.app.SIP.ProbeInterval != tc.want {
			t.Errorf("%s: the probe interval is %s, want %s", tc.name, set.app.SIP.ProbeInterval, tc.want)
		}
	}
}

// --sip-private-networks takes networks only, and never the ones that
// reach the node itself or the cloud's metadata service.
func TestSIPPrivateNetworksFlag(t *testing.T) {
	parse := func(v string) (app.SIPOptions, error) {
		o := app.DefaultSIPOptions
		fs := flag.NewFlagSet("switchboard", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.BindFlags(fs)
		return o, fs.Parse([]string{"--sip-private-networks=" + v})
	}
	o, err := parse("10.20.0.0/16, 192.168.7.0/24")
	if err != nil || o.PrivateNetworks.String() != "10.20.0.0/16,192.168.7.0/24" {
		t.Fatalf("networks: %v %v", o.PrivateNetworks, err)
	}
	for v, want := range map[string]string{
		"127.0.0.0/8":        "never trusted",
		"169.254.0.0/16":     "never trusted",
		"pbx.example.com":    "not host names",
		"10.20.0.1":          "list it as a network",
		"10.20.0.1/16":       "host bits",
		"sip:10.20.0.1:5060": "",
	} {
		if _, err := parse(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--sip-private-networks=%s: %v, want it refused (%q)", v, err, want)
		}
	}
}
