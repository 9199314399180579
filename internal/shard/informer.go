package shard

import (
	"errors"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// union is one informer over two: a handler added to it is added to both,
// and it has synced when both have. A Call assigned to this worker leaves
// the unassigned informer (a delete) and enters this worker's (an add);
// a handler hears both, in either order, and reads the Call back from the
// cache, which finds it in either.
type union struct {
	a, b cache.Informer
	done chan struct{}
}

var _ cache.Informer = &union{}

func newUnion(a, b cache.Informer) *union {
	u := &union{a: a, b: b, done: make(chan struct{})}
	go waitBoth(a.HasSyncedChecker(), b.HasSyncedChecker(), u.done)
	return u
}

// waitBoth closes done once a and b are done.
func waitBoth(a, b toolscache.DoneChecker, done chan struct{}) {
	<-a.Done()
	<-b.Done()
	close(done)
}

func (u *union) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return u.add(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandler(h)
	})
}

func (u *union) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return u.add(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithResyncPeriod(h, resync)
	})
}

func (u *union) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return u.add(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithOptions(h, o)
	})
}

func (u *union) add(add func(cache.Informer) (toolscache.ResourceEventHandlerRegistration, error)) (toolscache.ResourceEventHandlerRegistration, error) {
	ra, err := add(u.a)
	if err != nil {
		return nil, err
	}
	rb, err := add(u.b)
	if err != nil {
		return nil, errors.Join(err, u.a.RemoveEventHandler(ra))
	}
	r := &registration{a: ra, b: rb, done: make(chan struct{})}
	go waitBoth(ra.HasSyncedChecker(), rb.HasSyncedChecker(), r.done)
	return r, nil
}

func (u *union) RemoveEventHandler(h toolscache.ResourceEventHandlerRegistration) error {
	r, ok := h.(*registration)
	if !ok {
		return errors.New("not a registration of this informer")
	}
	return errors.Join(u.a.RemoveEventHandler(r.a), u.b.RemoveEventHandler(r.b))
}

func (u *union) AddIndexers(indexers toolscache.Indexers) error {
	return errors.Join(u.a.AddIndexers(indexers), u.b.AddIndexers(indexers))
}

func (u *union) HasSynced() bool { return u.a.HasSynced() && u.b.HasSynced() }
func (u *union) HasSyncedChecker() toolscache.DoneChecker {
	return checker{name: "calls", done: u.done}
}
func (u *union) IsStopped() bool { return u.a.IsStopped() && u.b.IsStopped() }

// registration is a handler's on both informers.
type registration struct {
	a, b toolscache.ResourceEventHandlerRegistration
	done chan struct{}
}

func (r *registration) HasSynced() bool { return r.a.HasSynced() && r.b.HasSynced() }
func (r *registration) HasSyncedChecker() toolscache.DoneChecker {
	return checker{name: "calls handler", done: r.done}
}

type checker struct {
	name string
	done chan struct{}
}

func (c checker) Name() string          { return c.name + " (this worker's and unassigned)" }
func (c checker) Done() <-chan struct{} { return c.done }
