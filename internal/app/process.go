package app

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/switchboard-dev/switchboard/controllers"
	"github.com/switchboard-dev/switchboard/internal/apikeys"
	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/dashboard"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/httpapi"
	"github.com/switchboard-dev/switchboard/internal/idempotency"
	"github.com/switchboard-dev/switchboard/internal/numberlists"
	"github.com/switchboard-dev/switchboard/internal/organizations"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/webhook"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// process is what the runnables of one Switchboard process share, built
// once by New: the manager, its indexes, the stores, the carrier, and
// the operations the REST API and the dashboard serve.
type process struct {
	ctx  context.Context
	mgr  manager.Manager
	opts Options

	secrets *organizations.Secrets
	numbers *numberlists.Index
	keys    *apikeys.Index
	synced  []func() bool // the indexes' initial lists are in

	dir            *directory.Directory
	recordings     recording.Store
	recordingFiles http.Handler // nil with S3
	dialer         *telephony.Router
	sip            *sipStack // nil: SIP off
	policy         egress.URLPolicy
	sender         *webhook.Sender
	admission      *quota.Admission
	book           *calls.Book
	placer         *calls.Placer
	pool           *workers.Pool
	leases         workers.Informer
	// orgs checks organizations, deliveries sends the queued webhook
	// deliveries: the leader's (nil in a process without reconcilers).
	orgs       *controllers.OrganizationCheck
	deliveries *controllers.WebhookDeliveryWorker
	idempotent *idempotency.Keys
	dashboard  *dashboard.Handler
	api        *httpapi.Server

	// worker is this replica's part as a call worker (nil without
	// reconcilers), set by the worker-heartbeat runnable.
	worker *callWorker
}

// where a runnable runs.
type where bool

const (
	everyReplica where = false
	leaderOnly   where = true
)

// runnable is one part of the process that the manager runs: its name (as
// README.md's architecture section lists it), where it runs, what it needs
// (nil: always present), and how it is added. Each is defined in the
// package that owns its behaviour; add only wires it.
type runnable struct {
	name  string
	where where
	needs func(*process) bool
	add   func(*process) error
}

// runnables are the process, as a table. Order matters only for what one
// adds and a later one reads (the worker's heartbeat, its drainer).
var runnables = []runnable{
	{"organizations", everyReplica, nil, addOrganizations},
	{"history-health", everyReplica, nil, addHistoryHealth},
	{"rest-api", everyReplica, nil, addRESTAPI},
	{"dashboard-sessions", everyReplica, nil, addDashboard},
	{"sip-engine", everyReplica, sipOn, addSIPEngine},
	{"worker-heartbeat", everyReplica, reconciling, addHeartbeat},
	{"call-controller", everyReplica, reconciling, addCallController},
	{"worker-sweeper", leaderOnly, reconciling, addWorkerSweeper},
	{"call-assigner", leaderOnly, reconciling, addAssigner},
	{"agent-controller", leaderOnly, reconciling, addAgentController},
	{"numberlist-controller", leaderOnly, reconciling, addNumberListController},
	{"siptrunk-controller", leaderOnly, reconcilingSIP, addTrunkController},
	{"webhookendpoint-controller", leaderOnly, reconciling, addEndpointController},
	{"webhook-delivery-worker", leaderOnly, reconciling, addDeliveryWorker},
	{"campaign-controller", leaderOnly, reconciling, addCampaignController},
	{"campaign-runner", leaderOnly, reconciling, addCampaignRunner},
	{"recording-retention", leaderOnly, retaining, addRecordingRetention},
	{"idempotency-sweeper", leaderOnly, nil, addIdempotencySweeper},
	{"dial-sweeper", leaderOnly, nil, addDialSweeper},
}

// RunnableNames are the names of the process's runnables, in the table's
// order, with where they run ("every replica" or "leader").
func RunnableNames() [][2]string {
	names := make([][2]string, 0, len(runnables))
	for _, r := range runnables {
		names = append(names, [2]string{r.name, r.where.String()})
	}
	return names
}

func (w where) String() string {
	if w == leaderOnly {
		return "leader"
	}
	return "every replica"
}

// What runnables need.
func reconciling(p *process) bool    { return p.opts.Reconcilers }
func sipOn(p *process) bool          { return p.sip != nil }
func reconcilingSIP(p *process) bool { return reconciling(p) && sipOn(p) }
func retaining(p *process) bool      { return reconciling(p) && p.opts.Retention.Recordings > 0 }

// addRunnables adds each runnable p has what it needs for, checking that
// it runs where the table says.
func (p *process) addRunnables() error {
	mgr := p.mgr
	defer func() { p.mgr = mgr }()
	for _, r := range runnables {
		if r.needs != nil && !r.needs(p) {
			continue
		}
		p.mgr = placed{Manager: mgr, runnable: r}
		if err := r.add(p); err != nil {
			return err
		}
	}
	return nil
}

// placed is the manager as one runnable's add sees it: what it adds must
// run where the table says, so the table cannot drift from the code.
type placed struct {
	manager.Manager
	runnable runnable
}

func (m placed) Add(r manager.Runnable) error {
	leader := true // the manager's reading of a runnable that does not say
	if l, ok := r.(manager.LeaderElectionRunnable); ok {
		leader = l.NeedLeaderElection()
	}
	if where(leader) != m.runnable.where {
		return fmt.Errorf("runnable %s: the table says it runs on %s, but %T runs on %s", m.runnable.name,
			m.runnable.where, r, where(leader))
	}
	return m.Manager.Add(r)
}

// newProcess builds the manager and what the runnables share.
func newProcess(ctx context.Context, cfg *rest.Config, opts Options) (*process, error) {
	mgr, err := newManager(cfg, opts)
	if err != nil {
		return nil, err
	}
	p := &process{ctx: ctx, mgr: mgr, opts: opts}
	// The Leases are read from the cache; it watches them in this one
	// namespace (cacheOptions), the one the leader-election Role covers.
	if p.leases, err = mgr.GetCache().GetInformer(ctx, leaseObject()); err != nil {
		return nil, err
	}
	p.pool = &workers.Pool{Reader: mgr.GetClient(), Namespace: workerNamespace(opts), Clock: clock.RealClock{}}
	if err := indexFields(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	p.secrets = organizations.New(mgr, mgr.GetEventRecorder("switchboard"), opts.Log.WithName("organizations"))
	p.numbers, p.keys = numberlists.NewIndex(), apikeys.NewIndex()
	if p.synced, err = feedIndexes(ctx, mgr.GetCache(), p.secrets, p.numbers, p.keys); err != nil {
		return nil, err
	}
	if p.recordings, p.recordingFiles, err = recordingStore(ctx, opts); err != nil {
		return nil, fmt.Errorf("recording store: %w", err)
	}
	p.dir = &directory.Directory{Cache: mgr.GetClient(), Live: mgr.GetAPIReader()}
	registerCollector("live-calls", &controllers.LiveCallsCollector{Cache: mgr.GetClient(), Directory: p.dir,
		Worker: opts.Worker.ID, Leader: mgr.Elected()})
	registerCollector("pending-deliveries", &controllers.PendingDeliveriesCollector{Store: opts.History})
	opts.SIP.Transfers = callpolicy.Transfers(p.numbers)
	if p.dialer, p.sip, err = newDialer(ctx, mgr, p.dir, opts); err != nil {
		return nil, err
	}
	p.policy = egress.URLPolicy{AllowInsecure: opts.Webhooks.AllowInsecure}
	p.sender = webhook.NewSender(webhook.SenderConfig{Policy: p.policy, Timeout: opts.Webhooks.Timeout,
		TLSConfig: opts.Webhooks.TLSConfig})
	// The other workers' calls are not in this replica's cache: their
	// Leases say how many each carries per organization.
	p.admission = &quota.Admission{Cache: mgr.GetClient(), Live: mgr.GetAPIReader(), Now: time.Now, Defaults: opts.Quota, Self: opts.Worker.ID,
		Elsewhere: &workers.Elsewhere{Reader: mgr.GetClient(), Namespace: workerNamespace(opts), Self: opts.Worker.ID,
			Clock: clock.RealClock{}}}
	p.book = &calls.Book{Directory: p.dir, Live: mgr.GetAPIReader(), History: opts.History}
	p.placer = &calls.Placer{Directory: p.dir, Book: p.book, Client: mgr.GetClient(), Numbers: p.numbers,
		Dialer: p.dialer, Quota: p.admission, Workers: p.pool}
	if opts.Reconcilers {
		p.orgs = &controllers.OrganizationCheck{Cache: mgr.GetClient(), Live: mgr.GetAPIReader(),
			Events: mgr.GetEventRecorder("switchboard"), Log: opts.Log.WithName("organizations")}
		p.deliveries = p.deliveryWorker()
	}
	p.idempotent = idempotencyKeys(opts)
	if err := p.serving(); err != nil {
		return nil, err
	}
	return p, mgr.AddHealthzCheck("ping", healthz.Ping)
}

// wakeDeliveries wakes the delivery worker; nil when this process sends
// no deliveries.
func (p *process) wakeDeliveries() func() {
	if p.deliveries == nil {
		return nil
	}
	return p.deliveries.Wake
}

// emitter queues the webhook events of calls and campaigns.
func (p *process) emitter() *deliveries.Emitter {
	return &deliveries.Emitter{Endpoints: p.mgr.GetClient(), Limits: p.admission, Queue: p.opts.History,
		Queued: p.wakeDeliveries(), Clock: clock.RealClock{}}
}
