package controllers

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownWrites remembers the resourceVersion of each object as this reconciler
// last wrote (or read live) it. A reconcile that reads an older copy from
// the informer cache (under load the watch lags behind the writes, and a
// requeue can fire before the write's own event arrives) would redo a step
// it already took: dial a call twice, send a delivery twice. Instead it
// reads that object live. A copy of another version is read live too (it
// may be older); the live version is then the one the cache must show.
type ownWrites struct {
	versions sync.Map // types.NamespacedName -> resourceVersion
}

// refresh replaces obj by its live copy when the cache has not yet seen
// this reconciler's last write of it.
func (w *ownWrites) refresh(ctx context.Context, live client.Reader, obj client.Object) error {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	written, ok := w.versions.Load(key)
	if !ok || written.(string) == obj.GetResourceVersion() {
		return nil
	}
	if err := live.Get(ctx, key, obj); err != nil {
		return err
	}
	w.record(obj)
	return nil
}

// record notes the version obj was written at.
func (w *ownWrites) record(obj client.Object) {
	w.versions.Store(types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, obj.GetResourceVersion())
}

// forget drops an object that needs no more reconciling.
func (w *ownWrites) forget(key types.NamespacedName) { w.versions.Delete(key) }
