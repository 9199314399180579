package app

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
)

// ClientOptions configure the process's client of the Kubernetes API.
type ClientOptions struct {
	// QPS and Burst bound the requests per second to the apiserver.
	// client-go's own defaults (5 and 10) would hold a busy operator to
	// a few calls a second; the apiserver's priority and fairness
	// protects the cluster instead.
	QPS   float64
	Burst int
}

// DefaultClientOptions are the binary's client settings.
var DefaultClientOptions = ClientOptions{QPS: 1000, Burst: 2000}

// BindFlags binds the client settings to fs, each defaulting to its value
// in o (DefaultClientOptions for the binary).
func (o *ClientOptions) BindFlags(fs *flag.FlagSet) {
	fs.Float64Var(&o.QPS, "kube-api-qps", o.QPS, "Requests per second to the Kubernetes API (more than 0).")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of requests to the Kubernetes API (more than 0).")
}

// Validate refuses a zero: client-go would read it as its own default of
// 5 requests a second.
func (o ClientOptions) Validate() error {
	return errors.Join(positive("kube-api-qps", o.QPS > 0), positive("kube-api-burst", o.Burst > 0))
}

// Apply sets the limits on cfg.
func (o ClientOptions) Apply(cfg *rest.Config) {
	cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
}

// LeaderElectionOptions configure the election of the replica that runs
// the reconcilers (every replica serves the REST API).
type LeaderElectionOptions struct {
	Enabled bool
	// Namespace holds the Lease (default: the pod's own).
	Namespace string
	// Lease is how long a leader's lease lasts without renewal: the
	// longest a dead leader's work waits for another replica (renewals
	// are due at 70 %, retries every fifth).
	Lease time.Duration
}

// DefaultLeaderElectionLease bounds how long the reconcilers wait for a
// new leader when the leader dies: under 15 s with retries.
const DefaultLeaderElectionLease = 10 * time.Second

// DefaultLeaderElectionOptions are the binary's election settings, and
// those of a program that leaves the lease zero.
var DefaultLeaderElectionOptions = LeaderElectionOptions{Lease: DefaultLeaderElectionLease}

// BindFlags binds the election settings to fs, each defaulting to its
// value in o.
func (o *LeaderElectionOptions) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.Enabled, "leader-elect", o.Enabled, "Elect a leader to run the reconcilers; every replica serves the REST API.")
	fs.StringVar(&o.Namespace, "leader-election-namespace", o.Namespace, "Namespace of the leader-election lease (default: the pod's).")
	fs.DurationVar(&o.Lease, "leader-elect-lease-duration", o.Lease,
		"How long the leader's lease lasts unrenewed: the longest the reconcilers wait for another replica when the leader dies (more than 0).")
}

// Validate refuses a zero lease, which used to mean "the default".
func (o LeaderElectionOptions) Validate() error {
	return positive("leader-elect-lease-duration", o.Lease > 0)
}

// RetentionOptions say how long what a call leaves behind is kept.
type RetentionOptions struct {
	// Calls is how long a finished, archived Call stays in the cluster
	// (kubectl get calls) before it is deleted; the history store keeps it.
	Calls time.Duration
	// Recordings is how long a recording, and the call's transcript, are
	// kept after they were stored; the leader then deletes them from their
	// stores and the recording from its archived call (which is kept). Zero keeps recordings forever. Calls
	// still in the cluster keep theirs until they leave, so it should be
	// longer than Calls.
	Recordings time.Duration
}

// DefaultCallRetention is how long a finished Call stays in the cluster
// after it is archived, for `kubectl get calls`.
const DefaultCallRetention = time.Hour

// DefaultRetentionOptions are the binary's retention settings: calls stay
// an hour, recordings forever.
var DefaultRetentionOptions = RetentionOptions{Calls: DefaultCallRetention}

// BindFlags binds the retention settings to fs, each defaulting to its
// value in o.
func (o *RetentionOptions) BindFlags(fs *flag.FlagSet) {
	fs.DurationVar(&o.Calls, "call-retention", o.Calls,
		"How long a finished Call stays in the cluster once it is in the history store (kubectl get calls); the REST API serves it from the store after that (more than 0).")
	fs.DurationVar(&o.Recordings, "recording-retention", o.Recordings,
		"How long a recording, and the call's transcript, are kept after the call (e.g. 2160h for 90 days); the leader then deletes them, and the "+
			"archived call is kept without them (recording_url null). 0 keeps them forever. Set it longer than --call-retention: a call's recording is deleted only once the Call "+
			"has left the cluster. With S3, a bucket lifecycle rule expiring objects under the prefix is the alternative (the REST API then answers "+
			"404 for the recordings it removed).")
}

// Validate refuses a zero call retention (a Call deleted the moment it is
// archived leaves `kubectl get calls` blind) and a negative one for
// recordings; zero there is real: forever.
func (o RetentionOptions) Validate() error {
	var errs []error
	errs = append(errs, positive("call-retention", o.Calls > 0))
	if o.Recordings < 0 {
		errs = append(errs, fmt.Errorf("--recording-retention must not be negative (0 keeps recordings forever), got %s", o.Recordings))
	}
	return errors.Join(errs...)
}

// positive is the error of a flag that must be more than 0, nil if ok.
func positive(name string, ok bool) error {
	if ok {
		return nil
	}
	return fmt.Errorf("--%s must be more than 0", name)
}

// CallOptions configure how calls are carried.
type CallOptions struct {
	// MaxConcurrent bounds the Call reconciles in progress at once.
	MaxConcurrent int
	// NormalEvents is "true", "false" or "auto" (true with --dev only):
	// whether calls' Normal Events are recorded, an apiserver write each.
	NormalEvents string
	// Simulator places the calls of agents without a trunkRef on the
	// simulated carrier; off, they fail with dispatch_failed.
	Simulator bool
}

// DefaultCallOptions are the binary's call settings.
var DefaultCallOptions = CallOptions{MaxConcurrent: 64, NormalEvents: "auto", Simulator: true}

// BindFlags binds the call settings to fs, each defaulting to its value in o.
func (o *CallOptions) BindFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.MaxConcurrent, "max-concurrent-calls", o.MaxConcurrent, "Calls reconciled at once.")
	fs.StringVar(&o.NormalEvents, "call-normal-events", o.NormalEvents, "Record the Normal Events of calls (Dialing, Answered, Ended, Analyzed), an apiserver write each: true, false, or auto (true with --dev only). Warnings are always recorded.")
	fs.BoolVar(&o.Simulator, "simulated-carrier", o.Simulator, "Place the calls of agents without a trunkRef on the simulated carrier; false fails them with dispatch_failed.")
}

// Validate refuses a zero bound and a switch that is not true, false or auto.
func (o CallOptions) Validate() error {
	_, err := ResolveAuto("call-normal-events", o.NormalEvents, false)
	return errors.Join(positive("max-concurrent-calls", o.MaxConcurrent > 0), err)
}

// MetricsOptions say where the metrics and the health probes are served.
type MetricsOptions struct {
	// Addr serves Prometheus metrics ("0": nowhere; empty: the process's
	// default, :8082, or 127.0.0.1:8082 with --dev).
	Addr string
	// Secure is "true", "false" or "auto" (true unless --dev): HTTPS to
	// clients the apiserver authenticates and authorizes.
	Secure string
	// ProbeAddr serves the health probes ("0": nowhere).
	ProbeAddr string
}

// DefaultProbeAddr is where the health probes are served in production.
const DefaultProbeAddr = ":8081"

// DefaultMetricsOptions are the binary's metrics and probe settings.
var DefaultMetricsOptions = MetricsOptions{Secure: "auto", ProbeAddr: DefaultProbeAddr}

// BindFlags binds the metrics and probe settings to fs, each defaulting to
// its value in o.
func (o *MetricsOptions) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Addr, "metrics-bind-address", o.Addr, "Prometheus metrics address (default :8082; 127.0.0.1:8082 with --dev); 0 disables.")
	fs.StringVar(&o.Secure, "metrics-secure", o.Secure, "Serve metrics over HTTPS to clients the apiserver authenticates and authorizes (the metrics-reader ClusterRole): true, false, or auto (true unless --dev).")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "Health probe address; 0 disables (default 0 with --dev).")
}

// Validate refuses a switch that is not true, false or auto.
func (o MetricsOptions) Validate() error {
	_, err := ResolveAuto("metrics-secure", o.Secure, false)
	return err
}

// ResolveAuto reads a switch flag: "true", "false", or "auto" for the
// value auto stands for (which depends on --dev).
func ResolveAuto(name, v string, auto bool) (bool, error) {
	switch v {
	case "auto":
		return auto, nil
	case "true", "false":
		return v == "true", nil
	}
	return false, fmt.Errorf("--%s: want true, false or auto, got %q", name, v)
}
