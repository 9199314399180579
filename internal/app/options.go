package app

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/switchboard-dev/switchboard/internal/conversation/engines"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/httpapi"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/publicaddr"
	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
	"github.com/switchboard-dev/switchboard/internal/webhook"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
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

// WebhookOptions configure event delivery. A program that builds them
// may leave settings zero for DefaultWebhookOptions's; the binary's flags
// (BindFlags) start from those and Validate refuses a zero that means nothing.
type WebhookOptions struct {
	// AllowInsecure permits http and loopback or private receivers: local
	// development only.
	AllowInsecure bool
	// AllowInsecureMode is --webhook-allow-insecure: "true", "false" or
	// "auto" (true with --dev only); the process resolves it into
	// AllowInsecure.
	AllowInsecureMode string
	// CAFile is a PEM file of extra CAs trusted for receivers; the process
	// reads it into TLSConfig.
	CAFile string
	// TLSConfig for connections to receivers; nil trusts the system roots.
	TLSConfig *tls.Config
	// Timeout per attempt (default 10 s, the receiver timeout the API promises).
	Timeout time.Duration
	// Schedule of attempts (default webhook.DefaultSchedule).
	Schedule webhook.Schedule
	// Retention of finished deliveries (default 7 days).
	Retention time.Duration
	// RotationOverlap is how long a rotated-out secret keeps signing
	// (default 24 h).
	RotationOverlap time.Duration
	// DisableAfter disables an endpoint that has failed this long (default
	// 5 days; negative: never).
	DisableAfter time.Duration
	// MaxConcurrent bounds attempts in flight (default 128).
	MaxConcurrent int
	// MaxConcurrentPerOrganization and MaxConcurrentPerEndpoint bound the
	// attempts in flight, test sends included, of one organization
	// (default 32) and of one endpoint (default 16), so that one
	// organization's slow receivers hold only its share of MaxConcurrent
	// and delay only its own events; negative: no bound.
	MaxConcurrentPerOrganization int
	MaxConcurrentPerEndpoint     int
	// ModelHosts are the private networks and host names agents' speech
	// recognition and language-model servers may be at
	// (--allow-private-model-hosts): never the webhooks'.
	ModelHosts egress.TrustedHosts
}

// modelPolicy guards the URLs of agents' speech recognition and language
// model servers: the webhooks' rules, and the trusted private networks.
func (o WebhookOptions) modelPolicy() egress.URLPolicy {
	return egress.URLPolicy{AllowInsecure: o.AllowInsecure, Trusted: o.ModelHosts}
}

// inFlight is the bounds per organization and endpoint.
func (o WebhookOptions) inFlight() history.InFlightLimits {
	return history.InFlightLimits{PerOrganization: o.MaxConcurrentPerOrganization, PerEndpoint: o.MaxConcurrentPerEndpoint}
}

// lease is how long a claimed delivery or a test send holds its slot: an
// attempt takes at most the timeout; the lease covers it with room for the
// save that follows.
func (o WebhookOptions) lease() time.Duration { return 2*o.Timeout + 30*time.Second }

// DefaultWebhookOptions are the delivery settings of the binary's flags,
// and of a program that leaves a setting zero: defined once, here.
var DefaultWebhookOptions = WebhookOptions{
	AllowInsecureMode:            "auto",
	Timeout:                      10 * time.Second,
	Schedule:                     webhook.DefaultSchedule,
	Retention:                    7 * 24 * time.Hour,
	RotationOverlap:              deliveries.DefaultRotationOverlap,
	DisableAfter:                 5 * 24 * time.Hour,
	MaxConcurrent:                128,
	MaxConcurrentPerOrganization: 32,
	MaxConcurrentPerEndpoint:     16,
}

// BindFlags binds the delivery settings to fs, each defaulting to its
// value in o (DefaultWebhookOptions for the binary).
func (o *WebhookOptions) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.AllowInsecureMode, "webhook-allow-insecure", o.AllowInsecureMode, "Allow http and loopback/private webhook receivers: true, false, or auto (true with --dev only). Never in production.")
	fs.StringVar(&o.CAFile, "webhook-ca-file", o.CAFile, "PEM file of extra CAs trusted for webhook receivers (besides the system roots).")
	fs.DurationVar(&o.Timeout, "webhook-timeout", o.Timeout, "Time a receiver has to answer an attempt (more than 0).")
	fs.Func("webhook-retry-schedule", "Delays before each attempt (default "+o.Schedule.String()+").", func(v string) error {
		s, err := webhook.ParseSchedule(v)
		o.Schedule = s
		return err
	})
	fs.DurationVar(&o.Retention, "webhook-delivery-retention", o.Retention, "How long finished deliveries are kept (more than 0).")
	fs.DurationVar(&o.RotationOverlap, "webhook-rotation-overlap", o.RotationOverlap,
		"How long a rotated-out signing secret keeps signing (more than 0).")
	fs.DurationVar(&o.DisableAfter, "webhook-disable-after", o.DisableAfter,
		"Disable an endpoint whose deliveries have all failed this long (negative: never).")
	fs.IntVar(&o.MaxConcurrent, "max-concurrent-deliveries", o.MaxConcurrent, "Webhook attempts in flight (at least 1).")
	fs.IntVar(&o.MaxConcurrentPerOrganization, "max-concurrent-deliveries-per-organization", o.MaxConcurrentPerOrganization,
		"Webhook attempts in flight of one organization, its test sends included (at least 1; negative: no bound).")
	fs.IntVar(&o.MaxConcurrentPerEndpoint, "max-concurrent-deliveries-per-endpoint", o.MaxConcurrentPerEndpoint,
		"Webhook attempts in flight to one endpoint, its test sends included (at least 1; negative: no bound).")
	fs.Func("allow-private-model-hosts", "Private hosts where agents' speech recognition and analysis servers may be, "+
		"comma-separated: host names (an in-cluster Whisper or vLLM Service's, whisper.speech.svc.cluster.local) and networks "+
		"in CIDR notation (10.100.0.0/16); every organization's agents may use them (default none: public addresses only).",
		func(v string) error {
			h, err := egress.ParseTrustedHosts(v)
			o.ModelHosts = h
			return err
		})
}

// Validate refuses the settings that have no meaning (a zero timeout
// would fail every attempt; zero attempts in flight would deliver
// nothing), rather than read them as "the default".
func (o WebhookOptions) Validate() error {
	var errs []error
	positive := func(name string, ok bool) {
		if !ok {
			errs = append(errs, fmt.Errorf("--%s must be more than 0", name))
		}
	}
	positive("webhook-timeout", o.Timeout > 0)
	positive("webhook-delivery-retention", o.Retention > 0)
	positive("max-concurrent-deliveries", o.MaxConcurrent > 0)
	positive("webhook-rotation-overlap", o.RotationOverlap > 0)
	if o.DisableAfter == 0 {
		errs = append(errs, errors.New("--webhook-disable-after must not be 0 (negative: never disable)"))
	}
	for name, n := range map[string]int{"max-concurrent-deliveries-per-organization": o.MaxConcurrentPerOrganization,
		"max-concurrent-deliveries-per-endpoint": o.MaxConcurrentPerEndpoint} {
		if n == 0 {
			errs = append(errs, fmt.Errorf("--%s must not be 0 (negative: no bound)", name))
		}
	}
	if len(o.Schedule) == 0 {
		errs = append(errs, errors.New("--webhook-retry-schedule must hold at least one attempt"))
	}
	if _, err := ResolveAuto("webhook-allow-insecure", o.AllowInsecureMode, false); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// withDefaults fills what a program (a test, say) left zero with
// DefaultWebhookOptions; the binary's flags never leave them zero.
func (o WebhookOptions) withDefaults() WebhookOptions {
	d := DefaultWebhookOptions
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if len(o.Schedule) == 0 {
		o.Schedule = d.Schedule
	}
	if o.Retention <= 0 {
		o.Retention = d.Retention
	}
	if o.RotationOverlap <= 0 {
		o.RotationOverlap = d.RotationOverlap
	}
	if o.DisableAfter == 0 {
		o.DisableAfter = d.DisableAfter
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = d.MaxConcurrent
	}
	if o.MaxConcurrentPerOrganization == 0 {
		o.MaxConcurrentPerOrganization = d.MaxConcurrentPerOrganization
	}
	if o.MaxConcurrentPerEndpoint == 0 {
		o.MaxConcurrentPerEndpoint = d.MaxConcurrentPerEndpoint
	}
	return o
}

// ReadOptions bound the memory and connections one organization's reads of
// calls (lists of the REST API, the dashboard's lists and overview) take.
// A program may leave them zero for DefaultReadOptions's.
type ReadOptions struct {
	// MaxConcurrentPerOrganization bounds the reads of one organization in
	// progress at once on a replica (default 4; negative: no bound);
	// beyond it they are answered 429 rate_limited.
	MaxConcurrentPerOrganization int
	// PageBytes bounds the JSON of the calls in one page of GET /v1/calls
	// (default httpapi.DefaultPageBytes); a fuller page ends early.
	PageBytes int
}

// DefaultReadsPerOrganization: four reads at once serve a dashboard and a
// backend paging through its calls; with each read holding one chunk of
// the store and one call's JSON, they stay within the budget hack/benchmarks.md states
// ("Reading calls in bounded memory").
const DefaultReadsPerOrganization = 4

// DefaultReadOptions are the read bounds of the binary's flags.
var DefaultReadOptions = ReadOptions{MaxConcurrentPerOrganization: DefaultReadsPerOrganization, PageBytes: httpapi.DefaultPageBytes}

// BindFlags binds the read bounds to fs, each defaulting to its value in o
// (DefaultReadOptions for the binary).
func (o *ReadOptions) BindFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.MaxConcurrentPerOrganization, "max-concurrent-reads-per-organization", o.MaxConcurrentPerOrganization,
		"Reads of calls (GET /v1/calls, the SDK's list-calls, the dashboard's overview and calls list) one organization may have "+
			"in progress at once on a replica; beyond it, 429 rate_limited with Retry-After (at least 1; negative: no bound).")
	fs.IntVar(&o.PageBytes, "list-page-max-bytes", o.PageBytes,
		"Bytes of JSON the calls of one page of GET /v1/calls may take; a page that would take more ends early with has_more and a next_cursor (more than 0).")
}

// Validate refuses bounds that would refuse every read.
func (o ReadOptions) Validate() error {
	if o.MaxConcurrentPerOrganization == 0 || o.PageBytes <= 0 {
		return fmt.Errorf("--max-concurrent-reads-per-organization must not be 0 (negative: no bound) and --list-page-max-bytes "+
			"must be more than 0, got %d and %d", o.MaxConcurrentPerOrganization, o.PageBytes)
	}
	return nil
}

// withDefaults fills what a program (a test, say) left zero.
func (o ReadOptions) withDefaults() ReadOptions {
	if o.MaxConcurrentPerOrganization == 0 {
		o.MaxConcurrentPerOrganization = DefaultReadOptions.MaxConcurrentPerOrganization
	}
	if o.PageBytes <= 0 {
		o.PageBytes = DefaultReadOptions.PageBytes
	}
	return o
}

// SIPOptions configure real telephony over SIP trunks.
type SIPOptions struct {
	// Disabled opens no SIP listener: calls of agents with a trunkRef fail
	// with dispatch_failed.
	Disabled bool
	// BindHost is the IP address SIP and RTP bind to (127.0.0.1 when
	// empty); ExternalHost, when set, is the address put in SIP headers and
	// SDP instead (behind NAT).
	BindHost, ExternalHost string
	// BindPort is the SIP port (UDP and TCP); ephemeral when zero.
	BindPort int
	// TLSPort is the SIP over TLS port; ephemeral when zero.
	TLSPort int
	// RTPPorts is the UDP range of calls' media, two ports a call;
	// ephemeral ports when zero.
	RTPPorts engine.PortRange
	// ExternalService ("namespace/name"), when set, is the Service whose
	// external address is announced (ExternalHost read from the cluster):
	// a pod behind a LoadBalancer Service of its own.
	ExternalService string
	// ExternalNode, when set, is the node whose ExternalIP is announced, if
	// it reports one: a pod on the host network of a cloud node whose
	// public address is translated to its interface's.
	ExternalNode string
	// SpoolDir holds recordings of calls in progress; it should survive a
	// container restart (an emptyDir does) so a call cut off keeps its
	// audio. Defaults to a directory under the OS temporary directory.
	SpoolDir string
	// Flite is the text-to-speech binary ("flite" on PATH when empty).
	Flite string
	// TTSTimeout bounds one flite run (tts.DefaultTimeout when zero).
	TTSTimeout time.Duration
	// ProbeInterval is how often each trunk is sent OPTIONS (default 60 s).
	ProbeInterval time.Duration
	// RecordingMaxBytes bounds each call's recording (set from
	// Options.RecordingMaxBytes).
	RecordingMaxBytes int64
	// Streams builds the streams of agents that stream to a bot (set
	// from the webhook policy: ws:// and private addresses only with --dev).
	Streams sip.StreamSource
	// Conversations builds the conversations of agents that converse with
	// the organization's model (set by the process, not by a flag).
	Conversations engines.Source
	// Transfers guards each call's transfers (set by the process from
	// the number lists' index, not by a flag).
	Transfers func(req telephony.Request) telephony.TransferGuard
	// Speech configures the embedded speech recognizer, which hears the
	// callees of agents without a speech server of their own.
	Speech speech.EmbeddedOptions
	// ModelPolicy guards agents' speech servers' URLs (set from the
	// webhook options: private addresses only in trusted networks).
	ModelPolicy egress.URLPolicy
	// PrivateNetworks are the private networks trunks (and their media)
	// may be in: the operator's own PBXs (--sip-private-networks). Other
	// trunks must be public, unless AddressPolicy allows any address.
	PrivateNetworks egress.TrustedHosts
	// AddressPolicy decides where SIP and RTP may go (set from the webhook
	// options, as every outbound address is: any address with --dev, and
	// PrivateNetworks).
	AddressPolicy egress.URLPolicy
}

// DefaultSIPOptions are the SIP settings of the binary's flags.
var DefaultSIPOptions = SIPOptions{Flite: "flite", TTSTimeout: tts.DefaultTimeout, ProbeInterval: time.Minute,
	Speech: speech.EmbeddedOptions{ModelDir: speech.DefaultModelDir, Decoders: runtime.NumCPU()}}

// BindFlags binds the SIP settings to fs, each defaulting to its value in o
// (DefaultSIPOptions for the binary; the process resolves an empty
// BindHost: 127.0.0.1 with --dev, else env POD_IP, else the first IPv4 address).
func (o *SIPOptions) BindFlags(fs *flag.FlagSet) {
	fs.Var(enabled{&o.Disabled}, "sip", "Place the calls of agents with a trunkRef over their SIP trunk.")
	fs.StringVar(&o.BindHost, "sip-bind-host", o.BindHost, "IP address SIP and RTP bind to (default 127.0.0.1 with --dev, else env POD_IP, else the first non-loopback IPv4 address).")
	fs.StringVar(&o.ExternalHost, "sip-external-host", o.ExternalHost, "Address announced in SIP headers and SDP when it differs from --sip-bind-host (behind NAT).")
	fs.IntVar(&o.BindPort, "sip-port", o.BindPort, "SIP port (UDP and TCP) on --sip-bind-host, also announced with --sip-external-host; 0: an ephemeral port.")
	fs.IntVar(&o.TLSPort, "sip-tls-port", o.TLSPort, "SIP over TLS port on --sip-bind-host, for carriers that open connections to us (calls go out on connections we open); 0: an ephemeral port.")
	fs.Func("rtp-ports", "UDP ports of calls' media, FIRST-LAST (e.g. 20000-20399): an even first port and two ports a call; default: ephemeral ports.",
		func(s string) (err error) { o.RTPPorts, err = engine.ParsePortRange(s); return err })
	fs.StringVar(&o.ExternalService, "sip-external-service", o.ExternalService,
		"namespace/name of a Service of this pod (a LoadBalancer, or with externalIPs) whose address is announced in SIP headers and SDP, read at start-up (instead of --sip-external-host).")
	fs.StringVar(&o.ExternalNode, "sip-external-node", o.ExternalNode,
		"Name of this pod's node (with hostNetwork): its ExternalIP address, if it reports one, is announced in SIP headers and SDP, read at start-up.")
	fs.StringVar(&o.SpoolDir, "sip-spool-dir", o.SpoolDir, "Where recordings of calls in progress are written (default <recording-dir>/.spool); keep it on a volume that survives a container restart.")
	fs.StringVar(&o.Flite, "flite", o.Flite, "The flite text-to-speech binary that speaks agents' scripts.")
	fs.DurationVar(&o.TTSTimeout, "tts-timeout", o.TTSTimeout, "How long flite may take to speak one text before it is killed and the call fails (more than 0).")
	fs.Func("sip-private-networks", "Private networks, in CIDR notation and comma-separated (10.20.0.0/16), where SIPTrunks and "+
		"their media may be: the operator's own PBXs (default none: trunks must be public, unless --dev). Every organization's trunks may use them.",
		func(v string) error {
			h, err := egress.ParseTrustedHosts(v)
			if err == nil && len(h.Names) > 0 {
				err = fmt.Errorf("--sip-private-networks takes networks in CIDR notation, not host names (%s): a trunk's address is checked after DNS", strings.Join(h.Names, ", "))
			}
			o.PrivateNetworks = h
			return err
		})
	fs.DurationVar(&o.ProbeInterval, "sip-probe-interval", o.ProbeInterval, "How often each SIPTrunk is sent OPTIONS to check it is reachable (more than 0).")
	fs.StringVar(&o.Speech.ModelDir, "speech-model-dir", o.Speech.ModelDir,
		"The embedded speech recognizer's model (PocketSphinx's US English model, Debian's pocketsphinx-en-us).")
	fs.IntVar(&o.Speech.Decoders, "speech-decoders", o.Speech.Decoders,
		"Utterances the embedded recognizer hears at once; each decoder holds the model in memory, about 90 MB (at least 1).")
}

// enabled is a boolean flag that says "on" for a field that says "off".
type enabled struct{ disabled *bool }

func (e enabled) String() string {
	if e.disabled == nil {
		return "true"
	}
	return strconv.FormatBool(!*e.disabled)
}

func (e enabled) Set(v string) error {
	on, err := strconv.ParseBool(v)
	*e.disabled = !on
	return err
}

func (enabled) IsBoolFlag() bool { return true }

// Validate refuses durations of zero, which would fail every script or
// probe trunks without pause.
func (o SIPOptions) Validate() error {
	if o.TTSTimeout <= 0 || o.ProbeInterval <= 0 {
		return fmt.Errorf("--tts-timeout and --sip-probe-interval must be more than 0, got %s and %s", o.TTSTimeout, o.ProbeInterval)
	}
	if o.BindPort < 0 || o.BindPort > 65535 {
		return fmt.Errorf("--sip-port must be 0 to 65535, got %d", o.BindPort)
	}
	if o.TLSPort < 0 || o.TLSPort > 65535 {
		return fmt.Errorf("--sip-tls-port must be 0 to 65535, got %d", o.TLSPort)
	}
	announced := 0
	for _, source := range []string{o.ExternalHost, o.ExternalService, o.ExternalNode} {
		if source != "" {
			announced++
		}
	}
	if announced > 1 {
		return errors.New("--sip-external-host, --sip-external-service and --sip-external-node each name the announced address: give one")
	}
	if o.ExternalService != "" {
		if _, err := publicaddr.ParseService(o.ExternalService); err != nil {
			return err
		}
	}
	if o.Speech.Decoders <= 0 {
		return fmt.Errorf("--speech-decoders must be more than 0, got %d", o.Speech.Decoders)
	}
	return nil
}
