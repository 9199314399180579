package controllers_test

// The reconcilers' suite: a real kube-apiserver and etcd (envtest), and a
// manager running the reconcilers as Switchboard's service account, with
// the simulated carrier for calls. Tests drive the reconcilers through
// resources, as kubectl does, and read what the cluster really holds with
// a client that has no cache. The REST API and the whole operator are
// tested end to end in internal/app/e2e.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/controllers"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/numberlists"
	"github.com/switchboard-dev/switchboard/internal/organizations"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/registration"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
	"github.com/switchboard-dev/switchboard/internal/webhook"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

// Short carrier timings: a call passes through every state for real in
// about a second.
var timings = sim.Timings{Ring: 300 * time.Millisecond, Talk: 800 * time.Millisecond, Voicemail: 500 * time.Millisecond}

const (
	// callRetention keeps finished Calls for the whole suite; the archive
	// test moves callClock past it instead of waiting.
	callRetention = time.Hour
	// recordingRetention is short: only the recordings of Calls that have
	// left the cluster expire, and only the archive test removes Calls.
	recordingRetention = 2 * time.Second
)

var (
	controlPlane *testsupport.ControlPlane
	k8s          client.Client // the administrator's, not cached
	historyStore history.Store
	recordDir    string
	// callClock is the call reconciler's clock.
	callClock = &skewedClock{}
	// deliveryLiveReads counts the delivery worker's reads of the apiserver.
	deliveryLiveReads = &countingReader{}
)

// schedule retries failed deliveries quickly.
var schedule = webhook.Schedule{0, 300 * time.Millisecond, 600 * time.Millisecond, time.Second}

// suite is the control plane, the history store and the manager running
// the reconcilers, started by the first test that needs them: the pure
// tests of package controllers run without them under -short.
var suite = &testsupport.Suite{What: "a control plane (envtest)", Start: startSuite}

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

func startSuite() (stop func(), err error) {
	var stops testsupport.Stops
	defer func() {
		if err != nil {
			stops.All()
		}
	}()
	cp, err := testsupport.StartControlPlane("..", newScheme())
	if err != nil {
		return nil, err
	}
	stops.Add(func() { _ = cp.Stop() })
	controlPlane, k8s = cp, cp.Client
	if recordDir, err = os.MkdirTemp("", "switchboard-controllers-"); err != nil {
		return nil, err
	}
	stops.Add(func() { _ = os.RemoveAll(recordDir) })
	if historyStore, err = history.Open(context.Background(), "sqlite:"+filepath.Join(recordDir, "history.db")); err != nil {
		return nil, fmt.Errorf("opening history store: %w", err)
	}
	stops.Add(func() { _ = historyStore.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	stops.Add(cancel)
	mgr, err := newManager(ctx)
	if err != nil {
		return nil, fmt.Errorf("building the manager: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stops.Add(func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped with:", err)
		}
	})
	return stops.All, nil
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := switchboardv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// newManager builds a manager with the reconcilers under test, running as
// Switchboard's service account with the roles of config/rbac.
func newManager(ctx context.Context) (manager.Manager, error) {
	mgr, err := manager.New(controlPlane.Manager, manager.Options{
		Scheme:                 newScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// As the operator runs them (see internal/app's newManager).
		Controller: config.Controller{UsePriorityQueue: ptr.To(true)},
		// Secrets and ConfigMaps are read live: the role may not list them
		// across the cluster, which a cached read would.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}}},
	})
	if err != nil {
		return nil, err
	}
	if err := directory.IndexFields(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	recordings, err := recording.NewLocal(recording.LocalConfig{Dir: recordDir, BaseURL: "http://127.0.0.1",
		SigningKey: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		return nil, err
	}
	// The Secrets of organization namespaces, watched per namespace as
	// the manager's role allows.
	secrets := organizations.New(mgr, mgr.GetEventRecorder("switchboard"), logr.Discard())
	if err := mgr.Add(secrets); err != nil {
		return nil, err
	}
	orgs := &controllers.OrganizationCheck{Cache: mgr.GetClient(), Live: mgr.GetAPIReader(),
		Events: mgr.GetEventRecorder("switchboard"), Log: logr.Discard()}
	if err := addConfigReconcilers(ctx, mgr, secrets, orgs); err != nil {
		return nil, err
	}
	worker, err := addWebhookReconcilers(mgr, secrets, orgs, recordings)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(&controllers.RecordingRetention{History: historyStore, Recordings: recordings,
		Client: mgr.GetClient(), Retention: recordingRetention, Clock: clock.RealClock{}, Log: logr.Discard()}); err != nil {
		return nil, err
	}
	calls := newCallReconciler(mgr, recordings, historyStore, callClock)
	calls.Webhooks.(*deliveries.Emitter).Queued = worker.Wake
	return mgr, calls.SetupWithManager(mgr)
}

// newCallReconciler is the call reconciler under test, on the simulated
// carrier, keeping its history in store.
func newCallReconciler(mgr manager.Manager, recordings recording.Store, store history.Store,
	clk clock.PassiveClock) *controllers.CallReconciler {
	return &controllers.CallReconciler{Client: mgr.GetClient(), Live: mgr.GetAPIReader(),
		Directory: &directory.Directory{Cache: mgr.GetClient(), Live: mgr.GetAPIReader()},
		Numbers:   numberlists.NewIndex(), Dialer: sim.New(timings), Recordings: recordings,
		Events: mgr.GetEventRecorder("switchboard"), History: store, Retention: callRetention,
		Webhooks: &deliveries.Emitter{Endpoints: mgr.GetClient(), Queue: store, Clock: clk},
		// Unlimited unless a test's namespace is annotated.
		RecordingQuota: quota.RecordingStorage{Limits: (&quota.Admission{Cache: mgr.GetClient()}).Limits,
			Stored: store.RecordingBytes},
		Clock: clk, MaxConcurrent: 16}
}

// addConfigReconcilers registers the reconcilers of the configuration
// kinds. SIPTrunks are probed by prober, not over the network: the SIP
// engine meets real peers in its own tests and in internal/app/e2e/sip's.
func addConfigReconcilers(ctx context.Context, mgr manager.Manager, secrets *organizations.Secrets,
	orgs *controllers.OrganizationCheck) error {
	// Voice servers are test servers on loopback over plain HTTP, probed
	// often enough that a test sees one go away.
	if err := (&controllers.AgentReconciler{Client: mgr.GetClient(), Organizations: orgs,
		VoicePolicy: egress.URLPolicy{AllowInsecure: true}, VoiceProbeInterval: voiceProbeInterval,
		VoiceProbeTimeout: time.Second}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&controllers.NumberListReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}
	regs := registration.New(registrar, nil)
	if err := mgr.Add(regs); err != nil {
		return err
	}
	return (&controllers.SIPTrunkReconciler{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), SecretChanges: secrets,
		Prober: prober, Events: mgr.GetEventRecorder("switchboard"), ProbeInterval: time.Hour,
		Registrations: regs, RegistrationChanged: regs.Changes()}).SetupWithManager(ctx, mgr)
}

// addWebhookReconcilers registers the WebhookEndpoint reconciler and the
// delivery worker, which share what they know of each endpoint's health.
// Receivers are test servers on loopback over plain HTTP.
func addWebhookReconcilers(mgr manager.Manager, secrets *organizations.Secrets, orgs *controllers.OrganizationCheck,
	recordings recording.Store) (*controllers.WebhookDeliveryWorker, error) {
	recorder := mgr.GetEventRecorder("switchboard")
	policy := egress.URLPolicy{AllowInsecure: true}
	health := deliveries.NewHealth()
	if err := (&controllers.WebhookEndpointReconciler{Client: mgr.GetClient(), Live: mgr.GetAPIReader(),
		Policy: policy, Health: health, Events: recorder, Clock: clock.RealClock{}, Organizations: orgs}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	deliveryLiveReads.Reader = mgr.GetAPIReader()
	worker := &controllers.WebhookDeliveryWorker{Client: mgr.GetClient(), Live: deliveryLiveReads,
		Secrets:    deliveries.SecretReader{Cache: secrets, Live: mgr.GetAPIReader()},
		Sender:     webhook.NewSender(webhook.SenderConfig{Policy: policy, Timeout: 10 * time.Second}),
		Recordings: recordings, Store: historyStore, Schedule: schedule, Retention: time.Hour,
		Health: health, Events: recorder, Clock: clock.RealClock{}, MaxConcurrent: 16,
		Lease: time.Minute, Log: logr.Discard()}
	return worker, mgr.Add(worker)
}

// skewedClock is the real clock moved on by an offset a test sets, so that
// a test reaches a retention without waiting for it.
type skewedClock struct{ offset atomic.Int64 }

func (c *skewedClock) Now() time.Time                  { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// skip moves the clock on by d until t ends.
func (c *skewedClock) skip(t *testing.T, d time.Duration) {
	c.offset.Add(int64(d))
	t.Cleanup(func() { c.offset.Add(-int64(d)) })
}

// newOrganization creates an organization namespace.
func newOrganization(t *testing.T) string {
	t.Helper()
	return controlPlane.NewOrganization(t, "org-")
}

// Polling of the tests: as long as a whole answered call takes.
const (
	resWait = testsupport.ResourceWait
	resPoll = testsupport.ResourcePoll
)

// countingReader counts the reads made through it, by object.
type countingReader struct {
	client.Reader
	mu sync.Mutex
	n  map[client.ObjectKey]int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.mu.Lock()
	if r.n == nil {
		r.n = map[client.ObjectKey]int{}
	}
	r.n[key]++
	r.mu.Unlock()
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *countingReader) reads(key client.ObjectKey) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[key]
}
