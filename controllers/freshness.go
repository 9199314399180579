package controllers

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownWrites remembers the resourceVersion of each object as this reconciler
// last wrote (or read live) it. A reconcile that reads an older copy from
// the informer cache (under load the watch lags behind the writes, and a
// requeue or a carrier event can come before the write's own event) would
// redo a step it already took: dial a call twice, queue its events twice.
type ownWrites struct {
	versions sync.Map // types.NamespacedName -> resourceVersion
}

// behind reports whether the cached obj predates this reconciler's last
// write of it. The reconcile is then skipped rather than redone from a live
// read: the watch event of that write is on its way and reconciles the
// object again, so a lagging cache costs the apiserver nothing. A copy
// that cannot be ordered against the write (a resourceVersion that is not
// a number, which Kubernetes allows) is read live instead, and the live
// version is then the one the cache must show.
func (w *ownWrites) behind(ctx context.Context, live client.Reader, obj client.Object) (bool, error) {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	written, ok := w.versions.Load(key)
	if !ok || written.(string) == obj.GetResourceVersion() {
		return false, nil
	}
	order, err := resourceversion.CompareResourceVersion(obj.GetResourceVersion(), written.(string))
	switch {
	case err == nil && order < 0:
		return true, nil
	case err == nil: // a later write (by someone else) that includes ours
		w.record(obj)
		return false, nil
	}
	if err := live.Get(ctx, key, obj); err != nil {
		return false, err
	}
	w.record(obj)
	return false, nil
}

// record notes the version obj was written at.
func (w *ownWrites) record(obj client.Object) {
	w.versions.Store(types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, obj.GetResourceVersion())
}

// forget drops an object that needs no more reconciling.
func (w *ownWrites) forget(key types.NamespacedName) { w.versions.Delete(key) }
