// Package shard gives each replica its share of the Calls, the pattern of
// kubernetes-controller-sharding: the manager's cache holds the Calls
// labelled with this replica's worker and the unassigned ones (no worker
// label yet), never another worker's. Memory and watch traffic per replica
// grow with the calls it carries, not with the installation's.
//
// A label selector is a conjunction: no one selector reads "mine or none".
// So the cache is two informers for Calls, one per selector, behind one
// cache.Cache: Get, List, indexes and watches see their union, and every
// reader of the manager's cache (the call reconciler, the leader's
// assigner, the quota's index, the trunk backlog) works unchanged. The
// other design, a second cache beside the manager's that some readers
// would have to know of, would spread the choice over every one of them;
// here it is made once.
package shard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// NewCache is the manager's cache.NewCacheFunc for worker: its Calls are
// those labelled with worker and those with no worker label; everything
// else is as opts say.
func NewCache(worker string) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		// An invalid value would make no selector, so a cache of every Call.
		if errs := validation.IsValidLabelValue(worker); worker == "" || len(errs) > 0 {
			return nil, fmt.Errorf("the worker's name %q is not a label value: %s", worker, strings.Join(errs, "; "))
		}
		own := opts
		own.ByObject = maps.Clone(opts.ByObject)
		if own.ByObject == nil {
			own.ByObject = map[client.Object]cache.ByObject{}
		}
		own.ByObject[&switchboardv1.Call{}] = cache.ByObject{Label: Own(worker)}
		mine, err := cache.New(cfg, own)
		if err != nil {
			return nil, err
		}
		// The second cache is asked for Calls only.
		unassigned, err := cache.New(cfg, cache.Options{HTTPClient: opts.HTTPClient, Scheme: opts.Scheme,
			Mapper: opts.Mapper, SyncPeriod: opts.SyncPeriod, DefaultTransform: opts.DefaultTransform,
			ByObject: map[client.Object]cache.ByObject{&switchboardv1.Call{}: {Label: Unassigned()}}})
		if err != nil {
			return nil, err
		}
		gvk, err := apiutil.GVKForObject(&switchboardv1.Call{}, opts.Scheme)
		if err != nil {
			return nil, err
		}
		return &Cache{Cache: mine, unassigned: unassigned, calls: gvk}, nil
	}
}

// Own selects worker's Calls.
func Own(worker string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{switchboardv1.WorkerLabel: worker})
}

// Unassigned selects the Calls that have no worker label.
func Unassigned() labels.Selector {
	req, err := labels.NewRequirement(switchboardv1.WorkerLabel, selection.DoesNotExist, nil)
	if err != nil {
		panic(err) // a constant, valid key
	}
	return labels.NewSelector().Add(*req)
}

// Cache is the manager's cache with Calls from two informers: this
// worker's (in the embedded cache, with everything else) and the
// unassigned ones.
type Cache struct {
	cache.Cache
	unassigned cache.Cache
	calls      schema.GroupVersionKind

	mu       sync.Mutex
	informer *union
}

var _ cache.Cache = &Cache{}

// isCall: obj is a Call or a CallList.
func (c *Cache) isCall(obj runtime.Object) bool {
	switch obj.(type) {
	case *switchboardv1.Call, *switchboardv1.CallList:
		return true
	}
	return false
}

// Get reads a Call from this worker's informer, else the unassigned one.
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Cache.Get(ctx, key, obj, opts...)
	if !c.isCall(obj) || !apierrors.IsNotFound(err) {
		return err
	}
	return c.unassigned.Get(ctx, key, obj, opts...)
}

// List lists Calls from both informers. A Call being assigned to this
// worker can be in both for a moment; it is listed once, as this worker's
// informer has it (the newer). A Limit applies to the union; continuing a
// list is not supported, as with any cache.
func (c *Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if !c.isCall(list) {
		return c.Cache.List(ctx, list, opts...)
	}
	o := (&client.ListOptions{}).ApplyOptions(opts)
	if o.Continue != "" {
		return errors.New("continue list option is not supported by the cache")
	}
	var unassigned switchboardv1.CallList
	if err := c.unassigned.List(ctx, &unassigned, opts...); err != nil {
		return err
	}
	if err := c.Cache.List(ctx, list, opts...); err != nil {
		return err
	}
	calls := list.(*switchboardv1.CallList)
	seen := make(map[types.UID]bool, len(calls.Items))
	for i := range calls.Items {
		seen[calls.Items[i].UID] = true
	}
	for i := range unassigned.Items {
		if o.Limit > 0 && int64(len(calls.Items)) >= o.Limit {
			break
		}
		if !seen[unassigned.Items[i].UID] {
			calls.Items = append(calls.Items, unassigned.Items[i])
		}
	}
	calls.Continue = ""
	return nil
}

// GetInformer returns, for Calls, one informer whose handlers hear both.
func (c *Cache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if !c.isCall(obj) {
		return c.Cache.GetInformer(ctx, obj, opts...)
	}
	return c.callInformer(func(from cache.Cache) (cache.Informer, error) { return from.GetInformer(ctx, obj, opts...) })
}

// GetInformerForKind is GetInformer by kind.
func (c *Cache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if gvk != c.calls {
		return c.Cache.GetInformerForKind(ctx, gvk, opts...)
	}
	return c.callInformer(func(from cache.Cache) (cache.Informer, error) {
		return from.GetInformerForKind(ctx, gvk, opts...)
	})
}

func (c *Cache) callInformer(get func(cache.Cache) (cache.Informer, error)) (cache.Informer, error) {
	mine, err := get(c.Cache)
	if err != nil {
		return nil, err
	}
	unassigned, err := get(c.unassigned)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.informer == nil {
		c.informer = newUnion(mine, unassigned)
	}
	return c.informer, nil
}

// RemoveInformer removes both Call informers.
func (c *Cache) RemoveInformer(ctx context.Context, obj client.Object) error {
	if !c.isCall(obj) {
		return c.Cache.RemoveInformer(ctx, obj)
	}
	c.mu.Lock()
	c.informer = nil
	c.mu.Unlock()
	return errors.Join(c.Cache.RemoveInformer(ctx, obj), c.unassigned.RemoveInformer(ctx, obj))
}

// IndexField indexes Calls in both informers.
func (c *Cache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if err := c.Cache.IndexField(ctx, obj, field, extract); err != nil || !c.isCall(obj) {
		return err
	}
	return c.unassigned.IndexField(ctx, obj, field, extract)
}

// Start runs both caches until ctx ends.
func (c *Cache) Start(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return c.Cache.Start(ctx) })
	g.Go(func() error { return c.unassigned.Start(ctx) })
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// WaitForCacheSync waits for both caches.
func (c *Cache) WaitForCacheSync(ctx context.Context) bool {
	mine := c.Cache.WaitForCacheSync(ctx)
	return c.unassigned.WaitForCacheSync(ctx) && mine
}
