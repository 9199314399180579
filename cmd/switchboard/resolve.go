package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/recording"
)

// settings are what the options resolve to: what the process runs with.
type settings struct {
	dev    devOptions
	assets string // with --dev: envtest's binaries (env SWITCHBOARD_ASSETS)
	// getenv is the environment, for the embedded control plane's sample
	// addresses (devenv.SampleAddrsFromEnv: SWITCHBOARD_SAMPLE_TRUNK_ADDR,
	// SWITCHBOARD_STREAMBOT_ADDR), which only the development binary has.
	getenv func(string) string
	// app is the operator's configuration, but for what only exists once
	// the process has opened it (listener, history store, signing key, log).
	app        app.Options
	apiAddr    string
	client     app.ClientOptions
	log        zap.Options
	historyDSN string
	// signingKey, recordingKeyFile: the recording-link key (env
	// SWITCHBOARD_RECORDING_SIGNING_KEY), else its file.
	signingKey       []byte
	recordingKeyFile string
	// notes are said once the log is set up.
	notes []string
}

// devProbeInterval is how often `make run` probes SIP trunks: its sample
// trunk names a callee on this machine that is seldom running, and a
// probe a minute of nothing is noise. A trunk is still probed when
// applied and when its Secret changes.
const devProbeInterval = 15 * time.Minute

// resolve is the one place that reads the environment and applies --dev
// and the "auto" values: the flags given (given) win, then the
// environment variables (getenv), then the defaults of development (--dev)
// or production. Every setting is checked before anything starts.
func resolve(o options, getenv func(string) string, given map[string]bool) (settings, error) {
	dev := o.dev.enabled
	set := settings{dev: o.dev, getenv: getenv}
	s3, err := o.environment(&set, getenv, given)
	if err != nil {
		return set, err
	}
	o.defaults(given)
	// Every group checks its own, then the "auto" switches resolve.
	if err := o.resolveWebhooks(dev); err != nil {
		return set, err
	}
	if err := errors.Join(o.validate()...); err != nil {
		return set, err
	}
	if o.webhooks.AllowInsecure {
		set.notes = append(set.notes, "webhook receivers may use http and loopback or private addresses: development mode")
	}
	normalEvents, _ := app.ResolveAuto("call-normal-events", o.calls.NormalEvents, dev)
	metricsSecure, _ := app.ResolveAuto("metrics-secure", o.metrics.Secure, !dev)

	set.apiAddr, set.client, set.historyDSN, set.log = o.api.Addr, o.client, o.history.DSN, o.log
	set.recordingKeyFile = o.recordings.SigningKeyFile
	set.app = app.Options{PublicURL: o.api.PublicURL, DefaultRegion: o.api.DefaultRegion,
		APIRequestTimeout: o.api.RequestTimeout, MaxPlacementsInFlight: o.api.PlacementsInFlight,
		AuthFailures: o.authFailures, Reads: o.reads, DashboardInsecureCookies: dev,
		Reconcilers: true, MaxConcurrentCalls: o.calls.MaxConcurrent, CallNormalEvents: normalEvents,
		DisableSimulator: !o.calls.Simulator, SimTimings: o.timings, SIP: o.sip, Worker: o.worker,
		RecordingDir: o.recordings.Dir, RecordingMaxBytes: o.recordings.MaxBytes, RecordingS3: s3,
		Retention: o.retention, Webhooks: o.webhooks, Quota: o.quota,
		LeaderElection: o.leaderElection, MetricsAddr: o.metrics.Addr, MetricsSecure: metricsSecure,
		ProbeAddr: o.metrics.ProbeAddr}
	return set, nil
}

// environment reads every variable the process reads: they stand in for
// the flags not given (given). It returns the S3 store, whose credentials
// only the environment holds.
func (o *options) environment(set *settings, getenv func(string) string, given map[string]bool) (*recording.S3Config, error) {
	fromEnv := func(v *string, flag, env string) {
		if e := getenv(env); !given[flag] && e != "" {
			*v = e
		}
	}
	fromEnv(&o.api.Addr, "api-addr", "SWITCHBOARD_ADDR")
	fromEnv(&o.history.DSN, "history-dsn", "SWITCHBOARD_HISTORY_DSN")
	fromEnv(&o.worker.ID, "worker-id", "POD_NAME") // the downward API's
	if !o.dev.enabled {
		// SIP binds to the pod's own address (the downward API's), which
		// carriers send SIP and RTP back to; --dev stays on loopback.
		fromEnv(&o.sip.BindHost, "sip-bind-host", "POD_IP")
	}
	set.assets = getenv("SWITCHBOARD_ASSETS")
	if k := getenv("SWITCHBOARD_RECORDING_SIGNING_KEY"); k != "" {
		set.signingKey = []byte(k)
	}
	s3, err := o.recordings.S3Config(getenv) // AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
	if s3 != nil && o.recordings.Insecure {
		set.notes = append(set.notes, "recordings go to S3 over plain http (--s3-insecure): local gateways only; endpoint "+s3.Endpoint)
	}
	return s3, err
}

// defaults fills the flags left empty with their production default, or
// their development one with --dev.
func (o *options) defaults(given map[string]bool) {
	orDefault := func(v *string, production, development string) {
		switch {
		case *v != "":
		case o.dev.enabled:
			*v = development
		default:
			*v = production
		}
	}
	orDefault(&o.api.Addr, ":8080", "127.0.0.1:8080")
	orDefault(&o.metrics.Addr, ":8082", "127.0.0.1:8082")
	if o.api.PublicURL == "" {
		host := o.api.Addr
		if strings.HasPrefix(host, ":") {
			host = "localhost" + host
		}
		o.api.PublicURL = "http://" + host
	}
	orDefault(&o.recordings.Dir, "/var/lib/switchboard/recordings", filepath.Join(o.dev.dir, "recordings"))
	orDefault(&o.history.DSN, "sqlite:/var/lib/switchboard/history/history.db", "sqlite:"+filepath.Join(o.dev.dir, "history.db"))
	if o.sip.BindHost == "" {
		o.sip.BindHost = "127.0.0.1"
		if !o.dev.enabled {
			o.sip.BindHost = firstIPv4()
		}
	}
	if o.sip.SpoolDir == "" {
		o.sip.SpoolDir = filepath.Join(o.recordings.Dir, ".spool") // no namespace starts with a dot
	}
	if o.dev.enabled {
		devDefaults(o, given)
	}
}

// devDefaults are the defaults of `make run` that differ from production's,
// each only when its flag is not given.
func devDefaults(o *options, given map[string]bool) {
	// People read the log (console lines, debug level).
	if !given["zap-devel"] {
		o.log.Development = true
	}
	if o.leaderElection.Namespace == "" {
		o.leaderElection.Namespace = devLeaderElectionNamespace // no pod to take it from
	}
	if !given["drain-timeout"] {
		o.worker.DrainTimeout = 0 // Ctrl-C stops at once; the calls end operator_restart at the next start
	}
	if o.metrics.ProbeAddr == app.DefaultProbeAddr {
		o.metrics.ProbeAddr = "0"
	}
	if !given["sip-probe-interval"] {
		o.sip.ProbeInterval = devProbeInterval
	}
	// The call limits are lifted (make run ARGS="--quota-create-rate=20"
	// shows production behaviour locally); the endpoint limit holds.
	if !given["quota-create-rate"] {
		o.quota.CreateRate = 0
	}
	if !given["quota-create-burst"] {
		o.quota.CreateBurst = 0
	}
	if !given["quota-active-calls"] {
		o.quota.ActiveCalls = 0
	}
}

// resolveWebhooks resolves --webhook-allow-insecure and reads the extra CAs.
func (o *options) resolveWebhooks(dev bool) error {
	var err error
	if o.webhooks.AllowInsecure, err = app.ResolveAuto("webhook-allow-insecure", o.webhooks.AllowInsecureMode, dev); err != nil {
		return err
	}
	if o.webhooks.CAFile == "" {
		return nil
	}
	pem, err := os.ReadFile(o.webhooks.CAFile)
	if err != nil {
		return fmt.Errorf("--webhook-ca-file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("--webhook-ca-file: no PEM certificate in %s", o.webhooks.CAFile)
	}
	o.webhooks.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return nil
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
