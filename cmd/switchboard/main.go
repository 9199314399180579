// Command switchboard runs the Switchboard operator: the reconcilers and the
// REST API. With --dev it first starts an embedded control plane with demo
// data (`make run`).
package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/authlimit"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/httpapi"
	"github.com/switchboard-dev/switchboard/internal/calls/placementgate"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

type flags struct {
	dev           bool
	devDir        string
	apiAddr       string
	publicURL     string
	region        string
	metricsAddr   string
	metricsSecure string // "auto": off with --dev
	probeAddr     string
	maxCalls      int
	insecureHooks string // "auto": on with --dev
	webhookCAFile string
	simulator     bool
	sipEnabled    bool
	historyDSN    string
	apiTimeout    time.Duration
	placements    int
	normalEvents  string // "auto": on with --dev

	// The option groups, each with its flags and defaults in its package.
	client         app.ClientOptions
	leaderElection app.LeaderElectionOptions
	retention      app.RetentionOptions
	recordings     recording.Options
	timings        sim.Timings
	webhooks       app.WebhookOptions
	sip            app.SIPOptions
	quota          quota.Limits
	authFailures   authlimit.Options
	reads          app.ReadOptions
	worker         workers.Options
}

func parseFlags() (*flags, *zap.Options) {
	f := &flags{client: app.DefaultClientOptions, leaderElection: app.DefaultLeaderElectionOptions, retention: app.DefaultRetentionOptions,
		recordings: recording.DefaultOptions, timings: sim.DefaultTimings(), authFailures: authlimit.Defaults, webhooks: app.DefaultWebhookOptions,
		quota: quota.Defaults, sip: app.DefaultSIPOptions, reads: app.DefaultReadOptions,
		worker: workers.DefaultOptions()}
	flag.BoolVar(&f.dev, "dev", false, "Start an embedded control plane with demo data (make run).")
	flag.StringVar(&f.devDir, "dev-dir", ".dev", "With --dev: where kubeconfig, api-key and recordings go.")
	flag.StringVar(&f.apiAddr, "api-addr", envOr("SWITCHBOARD_ADDR", ""), "REST API address (default :8080; 127.0.0.1:8080 with --dev). Env SWITCHBOARD_ADDR.")
	flag.StringVar(&f.publicURL, "public-url", "", "Base URL customers reach the REST API at; recording links use it (default http://<api-addr>).")
	flag.StringVar(&f.region, "default-region", "US", "Region for phone numbers sent without +.")
	flag.DurationVar(&f.apiTimeout, "api-request-timeout", httpapi.DefaultRequestTimeout, "How long a REST request may wait on the Kubernetes apiserver and the history store before it is answered 503 with Retry-After (an overloaded apiserver queues and throttles requests; this sheds the load instead of piling it up).")
	flag.IntVar(&f.placements, "max-placements-in-flight", placementgate.DefaultInFlight, "Call creations (POST /v1/calls, the SDK's create-phone-call, the dashboard's form) a replica has in progress at once, fewer while creates take over 100 ms on average, shared fairly between organizations; one more waits for a slot while it can still be placed within 200 ms, else is answered 503 server_busy with Retry-After: 1 and nothing created (negative: no bound).")
	f.authFailures.BindFlags(flag.CommandLine)
	f.reads.BindFlags(flag.CommandLine)

	flag.IntVar(&f.maxCalls, "max-concurrent-calls", 64, "Calls reconciled at once.")
	f.worker.BindFlags(flag.CommandLine)
	flag.StringVar(&f.normalEvents, "call-normal-events", "auto", "Record the Normal Events of calls (Dialing, Answered, Ended, Analyzed), an apiserver write each: true, false, or auto (true with --dev only). Warnings are always recorded.")
	flag.BoolVar(&f.simulator, "simulated-carrier", true, "Place the calls of agents without a trunkRef on the simulated carrier; false fails them with dispatch_failed.")
	f.timings.BindFlags(flag.CommandLine)
	flag.BoolVar(&f.sipEnabled, "sip", true, "Place the calls of agents with a trunkRef over their SIP trunk.")
	f.sip.BindFlags(flag.CommandLine)

	f.recordings.BindFlags(flag.CommandLine)
	f.retention.BindFlags(flag.CommandLine)
	flag.StringVar(&f.historyDSN, "history-dsn", envOr("SWITCHBOARD_HISTORY_DSN", ""), "The history store of calls: postgres://user@host/db?sslmode=verify-full (PostgreSQL, for production and several replicas; the password from env PGPASSWORD or the DSN) or sqlite:PATH (embedded, one replica). Default sqlite:/var/lib/switchboard/history/history.db (sqlite:<dev-dir>/history.db with --dev). Env SWITCHBOARD_HISTORY_DSN.")

	flag.StringVar(&f.insecureHooks, "webhook-allow-insecure", "auto", "Allow http and loopback/private webhook receivers: true, false, or auto (true with --dev only). Never in production.")
	flag.StringVar(&f.webhookCAFile, "webhook-ca-file", "", "PEM file of extra CAs trusted for webhook receivers (besides the system roots).")
	f.webhooks.BindFlags(flag.CommandLine)
	f.quota.BindFlags(flag.CommandLine)

	f.client.BindFlags(flag.CommandLine)
	f.leaderElection.BindFlags(flag.CommandLine)
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", "", "Prometheus metrics address (default :8082; 127.0.0.1:8082 with --dev); 0 disables.")
	flag.StringVar(&f.metricsSecure, "metrics-secure", "auto", "Serve metrics over HTTPS to clients the apiserver authenticates and authorizes (the metrics-reader ClusterRole): true, false, or auto (true unless --dev).")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Health probe address; 0 disables (default 0 with --dev).")
	zopts := &zap.Options{}
	zopts.BindFlags(flag.CommandLine)
	flag.Usage = func() { printUsage(flag.CommandLine.Output(), flag.CommandLine) }
	flag.Parse()
	// Production logs are JSON at info level; --dev reads for people
	// (console lines, debug level) unless --zap-devel says otherwise.
	if f.dev && !givenFlags()["zap-devel"] {
		zopts.Development = true
	}
	return f, zopts
}

func main() {
	f, zopts := parseFlags()
	log := zap.New(zap.UseFlagOptions(zopts))
	ctrl.SetLogger(log)
	ctx := ctrl.SetupSignalHandler()
	err := run(ctx, f, log)
	switch {
	case err == nil:
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		// Ctrl-C before the instance was up: what had started stopped.
		log.Info("interrupted while starting; stopped")
	default:
		// One line a user can act on; a stack trace would only bury it.
		fmt.Fprintln(os.Stderr, "switchboard:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, f *flags, log logr.Logger) error {
	f.applyDefaults()
	// Every setting is checked before anything starts: a mistyped flag
	// should not cost a control plane's start.
	set, err := f.resolve()
	if err != nil {
		return err
	}
	cfg, stop, err := controlPlane(ctx, f, log)
	if err != nil {
		return err
	}
	defer stop()
	f.client.Apply(cfg)
	var key []byte // S3 links are signed with the S3 credentials
	if set.s3 == nil {
		if key, err = signingKey(f); err != nil {
			return err
		}
	}
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", f.apiAddr)
	if err != nil {
		return fmt.Errorf("REST API address: %w", err)
	}
	store, err := history.Open(ctx, f.historyDSN)
	if err != nil {
		return fmt.Errorf("history store: %w", err)
	}
	defer func() { _ = store.Close() }()
	log.Info("history store open", "store", history.Describe(f.historyDSN))
	mgr, err := app.New(ctx, cfg, app.Options{APIListener: lis, PublicURL: f.publicURL,
		History: store, Retention: f.retention, APIRequestTimeout: f.apiTimeout, MaxPlacementsInFlight: f.placements, CallNormalEvents: set.normalEvents,
		Quota: f.quota, AuthFailures: f.authFailures, Reads: f.reads,
		RecordingDir: f.recordings.Dir, RecordingMaxBytes: f.recordings.MaxBytes, RecordingSigningKey: key, RecordingS3: set.s3, SimTimings: f.timings,
		DisableSimulator: !f.simulator, SIP: f.sip,
		DashboardInsecureCookies: f.dev,
		DefaultRegion:            f.region, Reconcilers: true, MaxConcurrentCalls: f.maxCalls, Webhooks: f.webhooks,
		LeaderElection: f.leaderElection, Worker: f.worker,
		MetricsAddr: f.metricsAddr, MetricsSecure: set.metricsSecure, ProbeAddr: f.probeAddr, Log: log, OnServing: f.banner})
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// validateOwn refuses the flags declared here whose zero would mean
// nothing, rather than let the code below read it as a default (a zero
// timeout used to become 10 s).
func (f *flags) validateOwn() error {
	var errs []error
	if f.apiTimeout <= 0 {
		errs = append(errs, errors.New("--api-request-timeout must be more than 0"))
	}
	if f.maxCalls <= 0 {
		errs = append(errs, errors.New("--max-concurrent-calls must be more than 0"))
	}
	if f.placements == 0 {
		errs = append(errs, errors.New("--max-placements-in-flight must not be 0 (negative: no bound)"))
	}
	return errors.Join(errs...)
}

// settings are what the flags resolve to beyond their own values.
type settings struct {
	s3            *recording.S3Config
	normalEvents  bool
	metricsSecure bool
}

// resolve checks every flag and resolves the "auto" ones.
func (f *flags) resolve() (settings, error) {
	var set settings
	var err error
	if set.s3, err = f.recordings.S3Config(os.Getenv); err != nil {
		return set, err
	}
	if set.s3 != nil && f.recordings.Insecure {
		ctrl.Log.Info("recordings go to S3 over plain http (--s3-insecure): local gateways only", "endpoint", set.s3.Endpoint)
	}
	if err := f.webhookOptions(); err != nil {
		return set, err
	}
	if err := errors.Join(f.validateOwn(), f.client.Validate(), f.leaderElection.Validate(), f.retention.Validate(), f.webhooks.Validate(), f.authFailures.Validate(), f.sip.Validate(), f.timings.Validate(), f.reads.Validate(), f.worker.Validate(),
		f.quotaDefaults(givenFlags())); err != nil {
		return set, err
	}
	if set.normalEvents, err = f.callNormalEvents(); err != nil {
		return set, err
	}
	set.metricsSecure, err = f.secureMetrics()
	return set, err
}

// webhookOptions resolves the development-mode switch and the extra CAs.
func (f *flags) webhookOptions() error {
	switch f.insecureHooks {
	case "auto":
		f.webhooks.AllowInsecure = f.dev
	case "true", "false":
		f.webhooks.AllowInsecure = f.insecureHooks == "true"
	default:
		return fmt.Errorf("--webhook-allow-insecure: want true, false or auto, got %q", f.insecureHooks)
	}
	if f.webhooks.AllowInsecure {
		ctrl.Log.Info("webhook receivers may use http and loopback or private addresses: development mode")
	}
	if f.webhookCAFile == "" {
		return nil
	}
	pem, err := os.ReadFile(f.webhookCAFile)
	if err != nil {
		return fmt.Errorf("--webhook-ca-file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("--webhook-ca-file: no PEM certificate in %s", f.webhookCAFile)
	}
	f.webhooks.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return nil
}

// quotaDefaults checks the --quota-* flags, and lifts the call limits the
// development mode does not give (make run ARGS="--quota-create-rate=20"
// shows production behaviour locally). The endpoint limit always holds.
func (f *flags) quotaDefaults(given map[string]bool) error {
	if err := f.quota.Validate(); err != nil {
		return err
	}
	if !f.dev {
		return nil
	}
	if !given["quota-create-rate"] {
		f.quota.CreateRate = 0
	}
	if !given["quota-create-burst"] {
		f.quota.CreateBurst = 0
	}
	if !given["quota-active-calls"] {
		f.quota.ActiveCalls = 0
	}
	return nil
}

// givenFlags are the flags on the command line.
func givenFlags() map[string]bool {
	given := map[string]bool{}
	flag.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	return given
}

// secureMetrics resolves --metrics-secure.
func (f *flags) secureMetrics() (bool, error) {
	switch f.metricsSecure {
	case "auto":
		return !f.dev, nil
	case "true", "false":
		return f.metricsSecure == "true", nil
	}
	return false, fmt.Errorf("--metrics-secure: want true, false or auto, got %q", f.metricsSecure)
}

// callNormalEvents resolves --call-normal-events.
func (f *flags) callNormalEvents() (bool, error) {
	switch f.normalEvents {
	case "auto":
		return f.dev, nil
	case "true", "false":
		return f.normalEvents == "true", nil
	}
	return false, fmt.Errorf("--call-normal-events: want true, false or auto, got %q", f.normalEvents)
}

// banner tells a `make run` user what to type next, once it works.
func (f *flags) banner() {
	if !f.dev {
		return
	}
	fmt.Fprintf(os.Stderr, "\nSwitchboard is running. In another terminal:\n"+
		"  export KUBECONFIG=%[1]s/kubeconfig\n"+
		"  curl -s http://%[2]s/v1/calls -H \"Authorization: Bearer $(cat %[1]s/api-key)\" \\\n"+
		"    -d '{\"agent_id\":\"7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f\",\"to_number\":\"+14155551234\",\"variables\":{\"customer_name\":\"Ada\"}}'\n"+
		"  kubectl get calls -n demo\n"+
		"Dashboard: http://%[2]s/dashboard/ (sign in with the key in %[1]s/api-key)\n", f.devDir, f.apiAddr)
	if f.metricsAddr != "0" {
		fmt.Fprintf(os.Stderr, "  curl -s http://%s/metrics | grep ^switchboard_\n", f.metricsAddr)
	}
	fmt.Fprint(os.Stderr, "Ctrl-C stops everything.\n\n")
}

func (f *flags) applyDefaults() {
	f.orDefault(&f.apiAddr, ":8080", "127.0.0.1:8080")
	f.orDefault(&f.metricsAddr, ":8082", "127.0.0.1:8082")
	if f.publicURL == "" {
		host := f.apiAddr
		if strings.HasPrefix(host, ":") {
			host = "localhost" + host
		}
		f.publicURL = "http://" + host
	}
	f.orDefault(&f.recordings.Dir, "/var/lib/switchboard/recordings", filepath.Join(f.devDir, "recordings"))
	f.orDefault(&f.historyDSN, "sqlite:/var/lib/switchboard/history/history.db", "sqlite:"+filepath.Join(f.devDir, "history.db"))
	if f.dev && f.leaderElection.Namespace == "" {
		f.leaderElection.Namespace = devLeaderElectionNamespace // no pod to take it from
	}
	if f.dev && !givenFlags()["drain-timeout"] {
		f.worker.DrainTimeout = 0 // Ctrl-C stops at once; the calls end operator_restart at the next start
	}
	if f.dev && f.probeAddr == ":8081" {
		f.probeAddr = "0"
	}
	f.probeDefault(givenFlags())
	f.sip.Disabled = !f.sipEnabled
	if f.sip.SpoolDir == "" {
		f.sip.SpoolDir = filepath.Join(f.recordings.Dir, ".spool") // no namespace starts with a dot
	}
	if f.sip.BindHost == "" {
		f.sip.BindHost = "127.0.0.1"
		if !f.dev {
			f.sip.BindHost = firstIPv4()
		}
	}
}

// devProbeInterval is how often `make run` probes SIP trunks: its sample
// trunk names a callee on this machine that is seldom running, and a
// probe a minute of nothing is noise. A trunk is still probed when
// applied and when its Secret changes.
const devProbeInterval = 15 * time.Minute

// probeDefault lengthens the SIP trunk probe interval with --dev, unless
// --sip-probe-interval is given.
func (f *flags) probeDefault(given map[string]bool) {
	if f.dev && !given["sip-probe-interval"] {
		f.sip.ProbeInterval = devProbeInterval
	}
}

// orDefault sets an empty flag to its production default, or to its
// development default with --dev.
func (f *flags) orDefault(v *string, production, development string) {
	switch {
	case *v != "":
	case f.dev:
		*v = development
	default:
		*v = production
	}
}

// firstIPv4 is the host's first non-loopback IPv4 address (127.0.0.1 if it
// has none): the address carriers send SIP and RTP back to.
func firstIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ip, ok := a.(*net.IPNet); ok && !ip.IP.IsLoopback() && ip.IP.To4() != nil {
				return ip.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// controlPlane returns the cluster to run against: the embedded one with
// --dev (in a binary built with the dev tag), else the usual kubeconfig /
// in-cluster lookup.
func controlPlane(ctx context.Context, f *flags, log logr.Logger) (*rest.Config, func(), error) {
	if f.dev {
		return localControlPlane(ctx, f, log)
	}
	cfg, err := ctrl.GetConfig()
	return cfg, func() {}, err
}

// signingKey reads the recording-link key. Without one, --dev keeps a key
// in its folder (links survive restarts); otherwise a random key is used
// and links stop working when the process restarts.
func signingKey(f *flags) ([]byte, error) {
	if k := os.Getenv("SWITCHBOARD_RECORDING_SIGNING_KEY"); k != "" {
		return []byte(k), nil
	}
	if f.recordings.SigningKeyFile != "" {
		return os.ReadFile(f.recordings.SigningKeyFile)
	}
	path := filepath.Join(f.devDir, "recording-signing-key")
	if f.dev {
		if k, err := os.ReadFile(path); err == nil && len(k) >= 32 {
			return k, nil
		}
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	if f.dev {
		return k, os.WriteFile(path, k, 0o600)
	}
	ctrl.Log.Info("no recording signing key configured: using a random one; recording links break on restart")
	return k, nil
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
