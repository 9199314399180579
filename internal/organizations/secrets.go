// Package organizations watches the Secrets of organization namespaces, one
// informer per namespace. Switchboard holds no right on Secrets across the
// cluster: its ClusterRole has none, and the platform team grants them per
// organization namespace with a RoleBinding to the ClusterRole
// switchboard-organization. An organization namespace is labelled
// switchboard.dev/organization=true; watches start and stop as the label
// comes and goes, without a restart.
package organizations

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/apikeys"
)

// IsOrganization reports whether ns is labelled an organization.
func IsOrganization(ns *corev1.Namespace) bool {
	return ns.Labels[switchboardv1.OrganizationLabel] == "true"
}

// ReasonAccessDenied is the reason of the Warning Event recorded on a
// namespace labelled an organization whose Secrets Switchboard may not list.
const ReasonAccessDenied = "SecretAccessDenied"

// ReasonAPIKeyRefused is the reason of the Warning Event recorded on an
// API-key Secret whose key Switchboard ignores (apikeys.Refusal).
const ReasonAPIKeyRefused = "APIKeyRefused"

// How long a namespace start may take, and how soon an organization
// namespace Switchboard could not watch is tried again (doubling up to
// retryMax): a RoleBinding created later is picked up within retryMax.
const (
	startTimeout = 30 * time.Second
	retryMin     = time.Second
	retryMax     = 30 * time.Second
	// startWorkers start the watches of organization namespaces in
	// parallel, at start when there may be many.
	startWorkers = 8
)

// Handler hears of the Secrets of organization namespaces. Its functions
// may run concurrently for different namespaces.
type Handler struct {
	Upsert func(*corev1.Secret)
	Delete func(*corev1.Secret)
	// Forget drops whatever the handler holds of a namespace: it stopped
	// being an organization, or Switchboard lost access to it.
	Forget func(namespace string)
}

// Secrets is Switchboard's view of the Secrets of organization namespaces.
// What it caches is trimmed first: API keys become digests, webhook signing
// Secrets stay whole, and any other Secret keeps only its metadata (enough
// to wake the SIP trunks that name it). Get reads that view; a Secret
// outside it is NotFound.
type Secrets struct {
	config     *rest.Config
	options    cache.Options
	namespaces cache.Cache // the manager's: Namespaces are watched cluster-wide
	live       client.Reader
	events     events.EventRecorder
	log        logr.Logger

	queue  workqueue.TypedRateLimitingInterface[string]
	synced atomic.Bool

	mu       sync.RWMutex
	watched  map[string]*watch
	handlers map[int]Handler
	nextID   int
}

// watch is the informer of one organization namespace.
type watch struct {
	namespace string
	cache     cache.Cache
	cancel    context.CancelFunc
	stopped   bool        // under Secrets.mu: events are no longer passed on
	lost      atomic.Bool // the apiserver refused the watch: start again
}

// New returns the Secrets of mgr's organization namespaces, read with
// mgr's identity; add it to mgr to run it.
func New(mgr manager.Manager, recorder events.EventRecorder, log logr.Logger) *Secrets {
	s := &Secrets{config: mgr.GetConfig(), namespaces: mgr.GetCache(), live: mgr.GetAPIReader(),
		events: recorder, log: log, watched: map[string]*watch{}, handlers: map[int]Handler{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryMin, retryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "organization-secrets"})}
	s.options = cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
		DefaultTransform: trim}
	return s
}

// trim keeps of a Secret what Switchboard uses, before it is cached.
func trim(o any) (any, error) {
	o, err := cache.TransformStripManagedFields()(o)
	s, ok := o.(*corev1.Secret)
	if err != nil || !ok {
		return o, err
	}
	switch s.Type {
	case switchboardv1.APIKeySecretType:
		return apikeys.TransformSecret(s)
	case switchboardv1.WebhookSecretType:
		return s, nil
	default:
		s.Data, s.StringData = nil, nil
		delete(s.Annotations, corev1.LastAppliedConfigAnnotation)
		return s, nil
	}
}

// Subscribe passes every Secret event of every organization namespace to h
// from now on (Secrets already seen are not replayed), until the returned
// function is called.
func (s *Secrets) Subscribe(h Handler) (unsubscribe func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID
	s.nextID++
	s.handlers[id] = h
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.handlers, id)
	}
}

// HasSynced reports whether every namespace that was an organization when
// Secrets started is watched with its initial list, or was found out of
// reach: until then the API keys of some organization may be missing.
func (s *Secrets) HasSynced() bool { return s.synced.Load() }

// Get reads a Secret of an organization namespace from the cache.
func (s *Secrets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s.mu.RLock()
	w := s.watched[key.Namespace]
	s.mu.RUnlock()
	if w == nil {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	return w.cache.Get(ctx, key, obj, opts...)
}

// NeedLeaderElection is false: every replica serves API keys.
func (s *Secrets) NeedLeaderElection() bool { return false }

// Start watches the organization namespaces until ctx ends.
func (s *Secrets) Start(ctx context.Context) error {
	defer s.stopAll()
	defer s.queue.ShutDown()
	informer, err := s.namespaces.GetInformer(ctx, &corev1.Namespace{})
	if err != nil {
		return fmt.Errorf("namespace informer: %w", err)
	}
	enqueue := func(o any) {
		if ns, ok := unwrap(o).(*corev1.Namespace); ok {
			s.queue.Add(ns.Name)
		}
	}
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue})
	if err != nil {
		return err
	}
	defer func() { _ = informer.RemoveEventHandler(reg) }()
	if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil
	}
	if err := s.startInitial(ctx); err != nil {
		return err
	}
	s.synced.Store(true)
	for i := 0; i < startWorkers; i++ {
		go s.work(ctx)
	}
	<-ctx.Done()
	return nil
}

// startInitial starts the watches of the organization namespaces there
// are, before the REST API serves their keys.
func (s *Secrets) startInitial(ctx context.Context) error {
	var list corev1.NamespaceList
	if err := s.namespaces.List(ctx, &list, client.HasLabels{switchboardv1.OrganizationLabel}); err != nil {
		return err
	}
	names := make(chan string)
	var wg sync.WaitGroup
	for i := 0; i < startWorkers; i++ {
		wg.Go(func() {
			for name := range names {
				s.syncAndRequeue(ctx, name)
			}
		})
	}
	for _, ns := range list.Items {
		names <- ns.Name
	}
	close(names)
	wg.Wait()
	return nil
}

func (s *Secrets) work(ctx context.Context) {
	for {
		name, shutdown := s.queue.Get()
		if shutdown {
			return
		}
		s.syncAndRequeue(ctx, name)
		s.queue.Done(name)
	}
}

func (s *Secrets) syncAndRequeue(ctx context.Context, name string) {
	if err := s.sync(ctx, name); err != nil {
		s.log.Error(err, "watching the Secrets of an organization namespace", "namespace", name)
		s.queue.AddRateLimited(name)
		return
	}
	s.queue.Forget(name)
}

// sync starts or stops the watch of one namespace, as its label says.
func (s *Secrets) sync(ctx context.Context, name string) error {
	var ns corev1.Namespace
	err := s.namespaces.Get(ctx, client.ObjectKey{Name: name}, &ns)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	want := err == nil && IsOrganization(&ns)
	s.mu.RLock()
	w := s.watched[name]
	s.mu.RUnlock()
	if w != nil && (!want || w.lost.Load()) {
		s.stop(w)
		w = nil
	}
	if !want || w != nil {
		return nil
	}
	return s.start(ctx, &ns)
}

// start watches the Secrets of ns, once the apiserver says Switchboard may
// list them there.
func (s *Secrets) start(ctx context.Context, ns *corev1.Namespace) error {
	if err := s.checkAccess(ctx, ns); err != nil {
		return err
	}
	opts := s.options
	opts.DefaultNamespaces = map[string]cache.Config{ns.Name: {}}
	w := &watch{namespace: ns.Name}
	opts.DefaultWatchErrorHandler = func(ctx context.Context, r *toolscache.Reflector, err error) {
		if apierrors.IsForbidden(err) && !w.lost.Swap(true) {
			s.queue.Add(w.namespace)
		}
		toolscache.DefaultWatchErrorHandler(ctx, r, err)
	}
	c, err := cache.New(s.config, opts)
	if err != nil {
		return err
	}
	w.cache = c
	informer, err := c.GetInformer(ctx, &corev1.Secret{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	if _, err := informer.AddEventHandler(s.forward(w)); err != nil {
		return err
	}
	watchCtx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	go func() {
		if err := c.Start(watchCtx); err != nil {
			s.log.Error(err, "Secret watch stopped", "namespace", w.namespace)
		}
	}()
	syncCtx, done := context.WithTimeout(ctx, startTimeout)
	defer done()
	if !c.WaitForCacheSync(syncCtx) {
		s.stop(w) // forgets the keys it passed on while listing
		return fmt.Errorf("the Secrets of namespace %s did not sync within %s", ns.Name, startTimeout)
	}
	s.mu.Lock()
	s.watched[ns.Name] = w
	s.mu.Unlock()
	s.log.Info("watching the Secrets of an organization namespace", "namespace", ns.Name)
	return nil
}

// checkAccess lists one Secret's metadata: a namespace labelled an
// organization without its RoleBinding is reported, on the namespace and in
// the log, and tried again later; the others go on.
func (s *Secrets) checkAccess(ctx context.Context, ns *corev1.Namespace) error {
	err := listOneSecret(ctx, s.live, ns.Name)
	if apierrors.IsForbidden(err) {
		s.events.Eventf(ns, nil, corev1.EventTypeWarning, ReasonAccessDenied, "WatchSecrets",
			"Switchboard may not list Secrets in this organization namespace, so its API keys are not served: "+
				"bind the ClusterRole %s to Switchboard's service account here with a RoleBinding",
			switchboardv1.OrganizationClusterRole)
		return fmt.Errorf("no access to the Secrets of namespace %s (no RoleBinding to the ClusterRole %s?): %w",
			ns.Name, switchboardv1.OrganizationClusterRole, err)
	}
	return err
}

// stop ends the watch of w's namespace and has every handler forget it,
// revoking its API keys. No event of the namespace is passed on after.
func (s *Secrets) stop(w *watch) {
	s.mu.Lock()
	w.stopped = true
	if s.watched[w.namespace] == w {
		delete(s.watched, w.namespace)
	}
	for _, h := range s.handlers {
		h.Forget(w.namespace)
	}
	s.mu.Unlock()
	w.cancel()
	s.log.Info("stopped watching the Secrets of a namespace", "namespace", w.namespace,
		"lostAccess", w.lost.Load())
}

func (s *Secrets) stopAll() {
	s.mu.RLock()
	all := make([]*watch, 0, len(s.watched))
	for _, w := range s.watched {
		all = append(all, w)
	}
	s.mu.RUnlock()
	for _, w := range all {
		s.stop(w)
	}
}

// forward passes the events of w's informer to the handlers. Holding the
// read lock while they run lets stop wait for events in flight.
func (s *Secrets) forward(w *watch) toolscache.ResourceEventHandler {
	pass := func(o any, deleted bool) {
		secret, ok := unwrap(o).(*corev1.Secret)
		if !ok {
			return
		}
		s.mu.RLock()
		defer s.mu.RUnlock()
		if w.stopped {
			return
		}
		if !deleted {
			s.warnRefusedKey(secret)
		}
		for _, h := range s.handlers {
			if deleted {
				h.Delete(secret)
			} else {
				h.Upsert(secret)
			}
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { pass(o, false) },
		UpdateFunc: func(_, o any) { pass(o, false) },
		DeleteFunc: func(o any) { pass(o, true) },
	}
}

// warnRefusedKey tells the platform team, on the Secret and in the log,
// why an API key it stored authenticates nobody.
func (s *Secrets) warnRefusedKey(secret *corev1.Secret) {
	why := apikeys.Refusal(secret)
	if why == "" {
		return
	}
	s.events.Eventf(secret, nil, corev1.EventTypeWarning, ReasonAPIKeyRefused, "IndexAPIKey", why)
	s.log.Info("ignoring an API key shorter than the minimum", "namespace", secret.Namespace, "secret", secret.Name,
		"minLength", apikeys.MinKeyLength)
}

// unwrap returns the last known object of a delete whose watch was missed.
func unwrap(o any) any {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return o
}
