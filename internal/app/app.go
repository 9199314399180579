// Package app wires Switchboard together: the manager, its caches and
// indexes, the reconcilers and the REST API. cmd/switchboard, `make run`
// and the integration tests all start the operator through New, so they run
// the same thing.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/authlimit"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/calls/placementgate"
	"github.com/switchboard-dev/switchboard/internal/campaigns"
	"github.com/switchboard-dev/switchboard/internal/conversation/engines"
	"github.com/switchboard-dev/switchboard/internal/dashboard"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/httpapi"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/services"
	"github.com/switchboard-dev/switchboard/internal/shard"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// Options configure one Switchboard process.
type Options struct {
	// APIListener serves the REST API (and signed recording links).
	APIListener net.Listener
	// PublicURL is where customers reach the REST API; recording links use it.
	PublicURL string
	// RecordingDir holds recordings (the local-files store).
	RecordingDir string
	// RecordingSigningKey signs recording links (at least 32 bytes).
	RecordingSigningKey []byte
	// RecordingMaxBytes bounds one call's recording (0: no bound).
	RecordingMaxBytes int64
	// RecordingS3, if set, keeps recordings in S3 instead of RecordingDir;
	// links are then presigned S3 URLs and the REST API serves no files.
	RecordingS3 *recording.S3Config
	// Carrier timings of the simulated carrier.
	SimTimings sim.Timings
	// DisableSimulator turns the simulated carrier off: calls of agents
	// without a trunkRef then fail with dispatch_failed.
	DisableSimulator bool
	// SIP configures calls over SIP trunks.
	SIP SIPOptions
	// DefaultRegion reads numbers sent without "+".
	DefaultRegion string
	// APIRequestTimeout bounds a REST request's wait on the apiserver and
	// the history store (httpapi.DefaultRequestTimeout when zero).
	APIRequestTimeout time.Duration
	// MaxPlacementsInFlight bounds the call placements in progress at once
	// (placementgate.DefaultInFlight when zero; negative: no bound).
	MaxPlacementsInFlight int
	// PlacementBudget is how long a placement may wait for the gate and be
	// placed (placementgate.Budget when zero). Tests that check the order
	// of the limits, not the machine's speed, raise it.
	PlacementBudget time.Duration
	// AuthFailures is the budget of failed authentications per client
	// address and per organization (authlimit.Defaults when zero).
	AuthFailures authlimit.Options
	// Reconcilers false runs only the REST API (a benchmark, say).
	Reconcilers bool
	// CampaignStatusInterval is how often a running campaign's counters
	// are written (controllers.DefaultCampaignStatusInterval when zero).
	CampaignStatusInterval time.Duration
	// MaxConcurrentCalls bounds concurrent Call reconciles.
	MaxConcurrentCalls int
	// Webhooks configures event delivery.
	Webhooks WebhookOptions
	// History is the store of calls that have left the cluster (required);
	// the caller opens and closes it.
	History history.Store
	// Retention says how long finished Calls stay in the cluster and how
	// long recordings are kept (DefaultRetentionOptions' call retention
	// when zero).
	Retention RetentionOptions
	// CallNormalEvents records the Normal Events of calls (dialing,
	// answered, ended, analyzed), an apiserver write each; Warnings are
	// always recorded.
	CallNormalEvents bool
	// Quota are the limits of an organization whose namespace does not
	// change them (zero values: unlimited).
	Quota quota.Limits
	// Reads bounds what one organization's reads of calls hold.
	Reads ReadOptions
	// Worker makes this replica a call worker (with Reconcilers): its
	// name, capacity, Lease and drain (workers.DefaultOptions' name,
	// capacity and Lease when zero; no drain when DrainTimeout is zero).
	Worker workers.Options
	// DashboardInsecureCookies sends the dashboard's session cookie without
	// the Secure attribute, so that it works over plain http: development
	// (--dev) only.
	DashboardInsecureCookies bool

	// OnServing, if set, is called once the REST API accepts requests.
	OnServing func()
	// SkipNameValidation lets one process start a manager again after
	// stopping one (the restart test); controller names are otherwise
	// unique per process, for metrics.
	SkipNameValidation bool

	// LeaderElection elects the replica that runs the reconcilers
	// (DefaultLeaderElectionLease when the lease is zero).
	LeaderElection LeaderElectionOptions
	// MetricsAddr is where Prometheus metrics are served ("0": nowhere).
	MetricsAddr string
	// MetricsSecure serves them over HTTPS to authenticated and authorized
	// clients only (a TokenReview and a SubjectAccessReview per scrape, as
	// kubebuilder's projects do); --dev serves plain HTTP on loopback.
	MetricsSecure bool
	ProbeAddr     string
	Log           logr.Logger
}

// NewScheme returns the scheme with Kubernetes' and Switchboard's types.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntimeMust(clientgoscheme.AddToScheme(s))
	utilruntimeMust(switchboardv1.AddToScheme(s))
	return s
}

func utilruntimeMust(err error) {
	if err != nil {
		panic(err)
	}
}

// New builds the manager with everything registered; Start runs it.
func New(ctx context.Context, cfg *rest.Config, opts Options) (manager.Manager, error) {
	if opts.History == nil {
		return nil, errors.New("no history store")
	}
	opts.Worker = workerDefaults(opts.Worker)
	opts.Webhooks = opts.Webhooks.withDefaults()
	p, err := newProcess(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := p.addRunnables(); err != nil {
		return nil, err
	}
	return p.worker.drained(p.mgr, opts.Worker), nil
}

// serving builds the REST API and the dashboard beside it, over one
// value of services: both run the same operations on the same state.
func (p *process) serving() error {
	opts, mgr := p.opts, p.mgr
	reads := opts.Reads.withDefaults()
	svc := services.Services{Keys: p.keys, AuthFailures: authFailures(opts), Calls: p.book,
		Placer:  gated(p.placer, opts.MaxPlacementsInFlight, opts.PlacementBudget),
		Stopper: &calls.Stopper{Book: p.book, Client: mgr.GetClient()}, Quota: p.admission,
		Reads: &quota.Reads{PerOrganization: reads.MaxConcurrentPerOrganization},
		Campaigns: &campaigns.Service{Client: mgr.GetClient(), Cache: mgr.GetClient(), Live: mgr.GetAPIReader(),
			Directory: p.dir, Contacts: opts.History, Region: opts.DefaultRegion, Now: time.Now},
		Endpoints: &endpoints.Service{Directory: p.dir, Client: mgr.GetClient(), Live: mgr.GetAPIReader(),
			Quota: p.admission, DeliveryLog: opts.History, Wake: p.wakeDeliveries(), Sender: p.sender, Policy: p.policy,
			RotationOverlap: opts.Webhooks.RotationOverlap, InFlight: opts.Webhooks.inFlight(),
			Lease: opts.Webhooks.lease(), Log: opts.Log.WithName("api")},
		Recordings: p.recordings, Workers: p.pool, DefaultRegion: opts.DefaultRegion}
	var err error
	// The agents page's voice samples: each agent's voice server, as its
	// calls speak (the model policy, API keys read live), or the embedded
	// voice, one flite run at a time (the dashboard keeps each agent's
	// sample).
	voice := &tts.Flite{Binary: opts.SIP.Flite, Timeout: opts.SIP.TTSTimeout, MaxRuns: 1, CacheEntries: 1}
	voices := &tts.Voices{Secrets: mgr.GetAPIReader(), Policy: opts.Webhooks.modelPolicy(), Embedded: voice}
	if p.dashboard, err = dashboard.New(dashboard.Config{Services: svc, Cache: mgr.GetClient(), Voice: voice, Voices: voices,
		InsecureCookies: opts.DashboardInsecureCookies, Log: opts.Log.WithName("dashboard")}); err != nil {
		return err
	}
	router := httpapi.NewRouter(httpapi.Config{Services: svc, PageBytes: reads.PageBytes,
		Idempotency: p.idempotent, RecordingFiles: p.recordingFiles, Dashboard: p.dashboard,
		RequestTimeout: opts.APIRequestTimeout, Log: opts.Log.WithName("api")})
	p.api = &httpapi.Server{Listener: opts.APIListener, Handler: router, Cache: mgr.GetCache(),
		Synced: p.synced, Log: opts.Log.WithName("api"), OnServing: opts.OnServing}
	return nil
}

// gated is placer with the replica's placement gate of n slots
// (placementgate.DefaultInFlight when zero; negative: none), each
// placement within budget: the REST API's and the dashboard's, not the
// campaigns'.
func gated(placer *calls.Placer, n int, budget time.Duration) *calls.Placer {
	withGate := *placer
	if gate := placementgate.New(cmp.Or(n, placementgate.DefaultInFlight), budget); gate != nil {
		withGate.Gate = gate
	}
	return &withGate
}

// newManager builds the manager: caches, clients, metrics, probes and
// leader election.
func newManager(cfg *rest.Config, opts Options) (manager.Manager, error) {
	lease := cmp.Or(opts.LeaderElection.Lease, DefaultLeaderElectionLease)
	mgr, err := manager.New(cfg, manager.Options{
		Scheme: NewScheme(),
		Cache:  cacheOptions(workerNamespace(opts)),
		// This replica caches its own Calls and the unassigned ones only
		// (package shard); what it reads of the others' is read live.
		NewCache:                shard.NewCache(opts.Worker.ID),
		Client:                  clientOptions(),
		Metrics:                 metricsOptions(opts),
		HealthProbeBindAddress:  opts.ProbeAddr,
		LeaderElection:          opts.LeaderElection.Enabled,
		LeaderElectionID:        "switchboard.dev",
		LeaderElectionNamespace: opts.LeaderElection.Namespace,
		LeaseDuration:           &lease,
		RenewDeadline:           ptr.To(lease * 7 / 10),
		// Followers look for a free lease every second whatever its length
		// (client-go waits up to 2.2 times that between looks), so that a
		// handed-over lease is taken within about 2 s: calls queue while no
		// one leads. The leader renews as often: one small write a second.
		RetryPeriod: ptr.To(min(lease/5, time.Second)),
		// A leader stopped on purpose (a rollout, a drained node) hands the
		// lease over as soon as its reconcilers and workers have stopped,
		// instead of leaving the others to wait for it to lapse. Safe: the
		// manager releases it only after every leader's runnable ended, and
		// the process does nothing after the manager returns but close the
		// store.
		LeaderElectionReleaseOnCancel: true,
		Logger:                        opts.Log,
		Controller: config.Controller{SkipNameValidation: &opts.SkipNameValidation,
			// The priority queue serves a fresh change ahead of a backlog
			// and of a new leader's initial list. It needs controller-runtime
			// v0.25.2 or later: before, it could deadlock when it shut down
			// (kubernetes-sigs/controller-runtime#3538), and a stopping
			// replica then held the lease for the whole 30 s grace period.
			UsePriorityQueue: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	return mgr, nil
}

// recordingStore builds the S3 store when configured, else the local-files
// store and the handler serving its links (nil for S3: links go to S3).
func recordingStore(ctx context.Context, opts Options) (recording.Store, http.Handler, error) {
	if opts.RecordingS3 != nil {
		s, err := recording.NewS3(ctx, *opts.RecordingS3)
		if err != nil {
			return nil, nil, err
		}
		return s, nil, nil
	}
	l, err := recording.NewLocal(recording.LocalConfig{Dir: opts.RecordingDir, BaseURL: opts.PublicURL,
		SigningKey: opts.RecordingSigningKey})
	if err != nil {
		return nil, nil, err
	}
	return l, l.Handler(), nil
}

// cacheOptions keeps the informer caches lean. No Secret is cached here:
// Switchboard may list Secrets only in organization namespaces, whose
// watches package organizations runs. Leases are watched only in the
// workers' namespace, where the leader-election Role lets it.
func cacheOptions(workerNamespace string) cache.Options {
	return cache.Options{DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{workerNamespace: {}}}}}
}

// clientOptions make the manager's client read Secrets and ConfigMaps from
// the apiserver: through the cache, the first read would start an informer
// across the cluster, which Switchboard's role does not allow.
func clientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}}}
}

// indexFields registers the cache indexes the REST API reads.
func indexFields(ctx context.Context, indexer client.FieldIndexer) error {
	if err := directory.IndexFields(ctx, indexer); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &switchboardv1.Call{}, quota.LivePhaseIndex, quota.LivePhase)
}

// newDialer routes each call to the simulated carrier or a SIP trunk, as
// enabled; sipCalls is nil when SIP is off.
func newDialer(ctx context.Context, mgr manager.Manager, dir *directory.Directory, opts Options) (*telephony.Router, *sipStack, error) {
	dialer := &telephony.Router{}
	streams := sip.StreamSource{Secrets: mgr.GetAPIReader(), Policy: egress.URLPolicy{AllowInsecure: opts.Webhooks.AllowInsecure}}
	conversations := engines.Source{Secrets: mgr.GetAPIReader(), Policy: opts.Webhooks.modelPolicy(),
		Log: opts.Log.WithName("conversation")}
	if !opts.DisableSimulator {
		carrier := sim.New(opts.SimTimings)
		carrier.EnableStreams(streams.Config)
		carrier.EnableConversations(conversations.For)
		carrier.LimitRecordings(opts.RecordingMaxBytes)
		if opts.SIP.Transfers != nil {
			// The number lists decide the simulated carrier's transfers too.
			carrier.GuardTransfers(opts.SIP.Transfers)
		}
		dialer.Sim = carrier
	}
	if opts.SIP.Disabled {
		return dialer, nil, nil
	}
	opts.SIP.Streams, opts.SIP.ModelPolicy = streams, opts.Webhooks.modelPolicy()
	opts.SIP.Conversations = conversations
	opts.SIP.RecordingMaxBytes = opts.RecordingMaxBytes
	opts.SIP.AddressPolicy = egress.URLPolicy{AllowInsecure: opts.Webhooks.AllowInsecure, Trusted: opts.SIP.PrivateNetworks}
	sipCalls, err := newSIPStack(ctx, mgr, dir, opts.Worker.ID, opts.SIP, opts.Log)
	if err != nil {
		return nil, nil, err
	}
	dialer.SIP = sipCalls.dialer
	return dialer, sipCalls, nil
}

// authFailures is the one throttle of failed authentications that the
// REST API and the dashboard's sign-in share.
func authFailures(opts Options) *authlimit.Limiter {
	budget := opts.AuthFailures
	if budget.Burst == 0 && budget.Rate == 0 {
		budget.Burst, budget.Rate = authlimit.Defaults.Burst, authlimit.Defaults.Rate
	}
	return authlimit.New(budget, time.Now)
}
