package main

import (
	"flag"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/authlimit"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/httpapi"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// options are every setting of the process, composed once from the groups
// the packages that use them own (each with its flags, its Validate and
// one Default). They are what the command line says; resolve turns them
// into what runs, applying --dev, the "auto" values and the environment.
type options struct {
	dev devOptions // this command's own: the embedded control plane

	api          httpapi.Options
	authFailures authlimit.Options
	reads        app.ReadOptions

	calls   app.CallOptions
	worker  workers.Options
	timings sim.Timings
	sip     app.SIPOptions

	recordings recording.Options
	retention  app.RetentionOptions
	history    history.Options

	webhooks app.WebhookOptions
	quota    quota.Limits

	client         app.ClientOptions
	leaderElection app.LeaderElectionOptions
	metrics        app.MetricsOptions
	log            zap.Options
}

// devOptions are --dev's: the embedded control plane of `make run`.
type devOptions struct {
	enabled bool
	dir     string
}

func (o *devOptions) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.enabled, "dev", o.enabled, "Start an embedded control plane with demo data (make run).")
	fs.StringVar(&o.dir, "dev-dir", o.dir, "With --dev: where kubeconfig, api-key and recordings go.")
}

// defaultOptions are the binary's defaults: each group's one Default.
func defaultOptions() options {
	return options{dev: devOptions{dir: ".dev"},
		api: httpapi.DefaultOptions, authFailures: authlimit.Defaults, reads: app.DefaultReadOptions,
		calls: app.DefaultCallOptions, worker: workers.DefaultOptions(), timings: sim.DefaultTimings(), sip: app.DefaultSIPOptions,
		recordings: recording.DefaultOptions, retention: app.DefaultRetentionOptions, history: history.DefaultOptions,
		webhooks: app.DefaultWebhookOptions, quota: quota.Defaults,
		client: app.DefaultClientOptions, leaderElection: app.DefaultLeaderElectionOptions, metrics: app.DefaultMetricsOptions}
}

// bindFlags binds every group's flags to fs (--help orders them by
// flagGroups, usage.go).
func (o *options) bindFlags(fs *flag.FlagSet) {
	for _, g := range []interface{ BindFlags(*flag.FlagSet) }{&o.dev,
		&o.api, &o.authFailures, &o.reads,
		&o.calls, &o.worker, &o.timings, &o.sip,
		&o.recordings, &o.retention, &o.history,
		&o.webhooks, &o.quota,
		&o.client, &o.leaderElection, &o.metrics, &o.log} {
		g.BindFlags(fs)
	}
}

// validate checks every group: a mistyped flag should not cost a control
// plane's start.
func (o *options) validate() []error {
	return []error{o.api.Validate(), o.authFailures.Validate(), o.reads.Validate(),
		o.calls.Validate(), o.worker.Validate(), o.timings.Validate(), o.sip.Validate(),
		o.retention.Validate(), o.webhooks.Validate(), o.quota.Validate(),
		o.client.Validate(), o.leaderElection.Validate(), o.metrics.Validate()}
}

// parseFlags parses the command line into the binary's defaults; given
// holds the flags it names.
func parseFlags() (o *options, given map[string]bool) {
	o = new(options)
	*o = defaultOptions()
	o.bindFlags(flag.CommandLine)
	flag.Usage = func() { printUsage(flag.CommandLine.Output(), flag.CommandLine) }
	flag.Parse()
	given = map[string]bool{}
	flag.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	return o, given
}
