package app

import (
	"cmp"
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/controllers"
	"github.com/switchboard-dev/switchboard/internal/analysis"
	"github.com/switchboard-dev/switchboard/internal/campaigns"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/idempotency"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/registration"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// The add functions of the runnables table (process.go), in its order.

func addOrganizations(p *process) error { return p.mgr.Add(p.secrets) }

func addHistoryHealth(p *process) error {
	return p.mgr.Add(&history.HealthCheck{Store: p.opts.History, Interval: 10 * time.Second,
		Log: p.opts.Log.WithName("history")})
}

func addRESTAPI(p *process) error {
	if err := p.mgr.Add(p.api); err != nil {
		return err
	}
	return p.mgr.AddReadyzCheck("api", p.api.Ready)
}

// addDashboard adds the dashboard's sweeper of expired sessions.
func addDashboard(p *process) error { return p.mgr.Add(p.dashboard) }

func addSIPEngine(p *process) error {
	return p.mgr.Add(sip.EngineCloser{Engine: p.sip.engine, Dialer: p.sip.dialer})
}

// addHeartbeat makes this process a call worker: its Lease, renewed on
// every replica, says what it carries, and its drainer lets its calls
// finish when it stops.
func addHeartbeat(p *process) error {
	o, log, c := p.opts.Worker, p.opts.Log.WithName("workers"), p.mgr.GetClient()
	hb := &workers.Heartbeat{Client: c, Namespace: p.pool.Namespace, Name: o.ID, Capacity: o.Capacity, Lease: o.Lease,
		Load: workers.LoadOf(c, o.ID, log), Clock: clock.RealClock{}, Log: log}
	if err := p.mgr.Add(hb); err != nil {
		return err
	}
	calls, err := p.mgr.GetCache().GetInformer(p.ctx, &switchboardv1.Call{})
	if err != nil {
		return err
	}
	if err := workers.WatchOwnCalls(calls, hb); err != nil {
		return err
	}
	registerCollector("worker", hb.Collector())
	p.worker = &callWorker{heartbeat: hb, drainer: &workers.Drainer{Heartbeat: hb, Timeout: o.DrainTimeout,
		Poll: 250 * time.Millisecond, Clock: clock.RealClock{}, Log: log, Unprocessed: workers.Unprocessed(c, o.ID)}}
	return nil
}

func addCallController(p *process) error {
	opts, mgr := p.opts, p.mgr
	// The reconcilers record through client-go's interface; the manager's
	// recorder also offers annotated Events, which nothing here sends.
	var recorder events.EventRecorder = mgr.GetEventRecorder("switchboard")
	if !opts.CallNormalEvents {
		recorder = controllers.WarningsOnly{EventRecorder: recorder}
	}
	r := &controllers.CallReconciler{Client: mgr.GetClient(), Directory: p.dir, Numbers: p.numbers,
		Dialer: p.dialer, Recordings: p.recordings, RecordingMaxBytes: opts.RecordingMaxBytes,
		RecordingQuota: quota.RecordingStorage{Limits: p.admission.Limits, Stored: opts.History.RecordingBytes},
		Events:         recorder, History: opts.History, Retention: cmp.Or(opts.Retention.Calls, DefaultCallRetention),
		Webhooks: p.emitter(), Quota: p.admission,
		Clock: clock.RealClock{}, MaxConcurrent: opts.MaxConcurrentCalls, Live: mgr.GetAPIReader(), Worker: opts.Worker.ID,
		// Agents with spec.analysis add their language model, its URL
		// guarded as webhook URLs are (http and private addresses: --dev).
		Analyzer: &analysis.LLM{Secrets: mgr.GetAPIReader(), Policy: opts.Webhooks.modelPolicy()}}
	if p.sip != nil {
		r.Wake = p.sip.callWake
	}
	return r.SetupWithManager(mgr)
}

func addWorkerSweeper(p *process) error {
	o := p.opts.Worker
	s := &workers.Sweeper{Client: p.mgr.GetClient(), Live: p.mgr.GetAPIReader(), Pool: p.pool, Self: o.ID, Interval: o.Lease / 3,
		Clock: clock.RealClock{}, Log: p.opts.Log.WithName("workers")}
	if err := p.mgr.Add(s); err != nil {
		return err
	}
	return workers.WatchLeases(p.leases, s)
}

func addAssigner(p *process) error {
	return (&workers.Assigner{Client: p.mgr.GetClient(), Pool: p.pool, Self: p.opts.Worker.ID, Retry: time.Second,
		Clock: clock.RealClock{}, Assigned: workers.ObserveAssignment}).SetupWithManager(p.mgr)
}

func addAgentController(p *process) error {
	if err := (&controllers.AgentReconciler{Client: p.mgr.GetClient(), Organizations: p.orgs,
		VoicePolicy: p.opts.Webhooks.modelPolicy()}).SetupWithManager(p.mgr); err != nil {
		return fmt.Errorf("agent controller: %w", err)
	}
	return nil
}

func addNumberListController(p *process) error {
	if err := (&controllers.NumberListReconciler{Client: p.mgr.GetClient()}).SetupWithManager(p.mgr); err != nil {
		return fmt.Errorf("numberlist controller: %w", err)
	}
	return nil
}

// addTrunkController registers the SIPTrunk controller, which probes
// trunks through the engine that places the calls (same socket, same Via)
// and shows the dialer's usage, and keeps registered the trunks that ask
// for it (the registration loops run with the controller, on the leader).
func addTrunkController(p *process) error {
	regs := registration.New(registration.EngineBinder{Engine: p.sip.engine}, nil)
	if err := p.mgr.Add(regs); err != nil {
		return fmt.Errorf("sip registrations: %w", err)
	}
	err := (&controllers.SIPTrunkReconciler{Client: p.mgr.GetClient(), Secrets: p.mgr.GetAPIReader(),
		SecretChanges: p.secrets, Prober: p.sip.engine,
		Usage: p.sip.dialer, UsageChanged: p.sip.trunkWake, Events: p.mgr.GetEventRecorder("switchboard"),
		Clock: clock.RealClock{}, ProbeInterval: p.opts.SIP.ProbeInterval,
		Registrations: regs, RegistrationChanged: regs.Changes()}).SetupWithManager(context.Background(), p.mgr)
	if err != nil {
		return fmt.Errorf("siptrunk controller: %w", err)
	}
	return nil
}

func addEndpointController(p *process) error {
	if err := (&controllers.WebhookEndpointReconciler{Client: p.mgr.GetClient(), Live: p.mgr.GetAPIReader(),
		Policy: p.policy, Health: p.deliveries.Health, Events: p.mgr.GetEventRecorder("switchboard"), Clock: clock.RealClock{},
		DisableAfter: p.opts.Webhooks.DisableAfter, Quota: p.admission, Organizations: p.orgs}).SetupWithManager(p.mgr); err != nil {
		return fmt.Errorf("webhook endpoint controller: %w", err)
	}
	return nil
}

func addDeliveryWorker(p *process) error { return p.mgr.Add(p.deliveries) }

// deliveryWorker is the worker that sends the deliveries queued in the
// history store; the endpoint reconciler shares its view of endpoints'
// health.
func (p *process) deliveryWorker() *controllers.WebhookDeliveryWorker {
	hooks := p.opts.Webhooks
	return &controllers.WebhookDeliveryWorker{Client: p.mgr.GetClient(), Live: p.mgr.GetAPIReader(),
		Secrets: deliveries.SecretReader{Cache: p.secrets, Live: p.mgr.GetAPIReader()},
		Sender:  p.sender, Recordings: p.recordings, Store: p.opts.History, Schedule: hooks.Schedule, Retention: hooks.Retention,
		Health: deliveries.NewHealth(), Events: p.mgr.GetEventRecorder("switchboard"), Clock: clock.RealClock{},
		MaxConcurrent: hooks.MaxConcurrent, InFlight: hooks.inFlight(), Lease: hooks.lease(),
		Log: p.opts.Log.WithName("webhook-delivery")}
}

// addCampaignController registers the Campaign reconciler (state and
// counters).
func addCampaignController(p *process) error {
	if err := (&controllers.CampaignReconciler{Client: p.mgr.GetClient(), Contacts: p.opts.History,
		Events: p.mgr.GetEventRecorder("switchboard"), Clock: clock.RealClock{}, Webhooks: p.emitter(),
		StatusInterval: p.opts.CampaignStatusInterval, Directory: p.dir}).SetupWithManager(p.mgr); err != nil {
		return fmt.Errorf("campaign controller: %w", err)
	}
	return nil
}

// addCampaignRunner adds the runner that dials campaigns' contacts,
// through the REST API's own placer.
func addCampaignRunner(p *process) error {
	return p.mgr.Add(&campaigns.Runner{Cache: p.mgr.GetClient(), Contacts: p.opts.History, Calls: p.book, Placer: p.placer,
		Limits: p.admission, Clock: clock.RealClock{}, Log: p.opts.Log.WithName("campaigns")})
}

// addRecordingRetention deletes recordings past their retention. Whether
// a call is still in the cluster is read live: this replica's cache holds
// only its own share of the Calls.
func addRecordingRetention(p *process) error {
	if err := p.mgr.Add(&controllers.RecordingRetention{History: p.opts.History, Recordings: p.recordings,
		Client: p.mgr.GetAPIReader(), Retention: p.opts.Retention.Recordings, Clock: clock.RealClock{},
		Log: p.opts.Log.WithName("recording-retention")}); err != nil {
		return fmt.Errorf("recording retention: %w", err)
	}
	return nil
}

func addIdempotencySweeper(p *process) error {
	log := p.opts.Log.WithName("idempotency")
	return p.mgr.Add(&idempotency.Sweeper{Store: p.opts.History, Interval: 10 * time.Minute, Now: time.Now,
		OnError: func(err error) { log.Error(err, "removing expired idempotency keys") }})
}

func addDialSweeper(p *process) error {
	return p.mgr.Add(&history.DialSweeper{Store: p.opts.History, Log: p.opts.Log.WithName("dials")})
}

// idempotencyKeys makes POST /v1/calls idempotent per key (the leader
// sweeps expired keys: idempotency-sweeper).
func idempotencyKeys(opts Options) *idempotency.Keys {
	log := opts.Log.WithName("idempotency")
	return &idempotency.Keys{Store: opts.History, TTL: idempotency.DefaultTTL, Lease: idempotency.DefaultLease,
		Wait: idempotency.DefaultWait, Poll: 50 * time.Millisecond, Now: time.Now,
		OnError: func(err error) { log.Error(err, "storing the response of an idempotent create") }}
}

func leaseObject() *coordinationv1.Lease { return &coordinationv1.Lease{} }
