package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
)

var (
	callsArchived = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchboard_calls_archived_total",
		Help: "Finished calls written to the history store.",
	})
	callArchiveFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchboard_call_archive_failures_total",
		Help: "Attempts to write a finished call to the history store that failed; the Call stays in the cluster and is retried.",
	})
	callsRemoved = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchboard_calls_removed_total",
		Help: "Archived Calls deleted from the cluster once their retention had passed.",
	})
	callArchiveLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "switchboard_call_archive_lag_seconds",
		Help:    "Time from a call being fully processed (final, analyzed) to its first write to the history store.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
	})
)

func init() {
	metrics.Registry.MustRegister(callsArchived, callArchiveFailures, callsRemoved, callArchiveLag)
}

// archived remembers the resourceVersion at which each finished Call was
// written to the history store, so that a Call waiting out its retention
// is not written again at every look. A new leader knows none of them: it
// asks the store about Calls that finished before it began (see
// archivedEarlier) rather than write each again.
type archived struct {
	versions sync.Map // types.NamespacedName -> resourceVersion
	// began is when this reconciler first archived; Calls finished before
	// then may be in the store already.
	began     time.Time
	beganOnce sync.Once
}

// since returns when this reconciler began archiving, now on first use.
func (a *archived) since(now func() time.Time) time.Time {
	a.beganOnce.Do(func() { a.began = now() })
	return a.began
}

func (a *archived) has(c *switchboardv1.Call) bool {
	v, ok := a.versions.Load(client.ObjectKeyFromObject(c))
	return ok && v.(string) == c.ResourceVersion
}

// removed notes a Call this reconciler deleted: until the cache has seen
// the deletion, a reconcile that still finds it there leaves it alone
// rather than archive and delete it again.
func (a *archived) removed(c *switchboardv1.Call) {
	a.versions.Store(client.ObjectKeyFromObject(c), deletedMark+string(c.UID))
}

func (a *archived) isRemoved(c *switchboardv1.Call) bool {
	v, ok := a.versions.Load(client.ObjectKeyFromObject(c))
	return ok && v.(string) == deletedMark+string(c.UID)
}

const deletedMark = "deleted:"

func (a *archived) record(c *switchboardv1.Call) {
	a.versions.Store(client.ObjectKeyFromObject(c), c.ResourceVersion)
}

func (a *archived) forget(key types.NamespacedName) { a.versions.Delete(key) }

// archive writes a finished Call to the history store, then, once
// Retention has passed since it finished, deletes it from the cluster:
// archive, then delete, so a call is always in one place or the other.
// A failed write keeps the Call, says so, and is retried with backoff.
func (r *CallReconciler) archive(ctx context.Context, c *switchboardv1.Call) (reconcile.Result, error) {
	if r.archived.isRemoved(c) {
		return reconcile.Result{}, nil
	}
	if !r.archived.has(c) {
		if err := r.save(ctx, c); err != nil {
			return reconcile.Result{}, err
		}
		r.archived.record(c)
	}
	if wait := finishedAt(c).Add(r.Retention).Sub(r.Clock.Now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	// The preconditions make sure that what is deleted is what was
	// archived: a Call changed since is archived again first.
	err := r.Delete(ctx, c, client.Preconditions{UID: &c.UID, ResourceVersion: &c.ResourceVersion})
	switch {
	case apierrors.IsConflict(err):
		// Changed since it was read: the change's own event brings it
		// back, to be archived as it is now.
		return reconcile.Result{}, nil
	case err != nil && !apierrors.IsNotFound(err):
		return reconcile.Result{}, fmt.Errorf("removing archived call: %w", err)
	}
	callsRemoved.Inc()
	r.archived.removed(c)
	r.writes.forget(client.ObjectKeyFromObject(c))
	return reconcile.Result{}, nil
}

// save writes c to the history store unless a former leader already did.
func (r *CallReconciler) save(ctx context.Context, c *switchboardv1.Call) error {
	if err := r.saveUnsavedTranscript(ctx, c); err != nil {
		return r.archiveFailed(ctx, c, err)
	}
	if r.archivedEarlier(ctx, c) {
		return nil
	}
	if err := r.History.SaveCall(ctx, c); err != nil {
		return r.archiveFailed(ctx, c, err)
	}
	if err := r.archiveRecovered(ctx, c); err != nil {
		return err
	}
	callsArchived.Inc()
	callArchiveLag.Observe(max(r.Clock.Since(finishedAt(c)), 0).Seconds())
	return nil
}

// archivedEarlier reports whether c, finished before this reconciler began
// archiving, is in the store as it now is: a former leader archived it. A
// new leader meets every finished Call still waiting out its retention
// (at 50 calls/s and the default hour, 180,000); reading one column of
// each spares the store's one writer saving each again, which would delay
// the archives and deliveries of the calls that are live. Any doubt (a
// read that fails, another version) means save.
func (r *CallReconciler) archivedEarlier(ctx context.Context, c *switchboardv1.Call) bool {
	if !finishedAt(c).Before(r.archived.since(r.Clock.Now)) {
		return false
	}
	if cond := apimeta.FindStatusCondition(c.Status.Conditions, switchboardv1.ArchivedCondition); cond != nil &&
		cond.Status == metav1.ConditionFalse {
		return false // the failure is still to be cleared, by save
	}
	version, err := r.History.CallVersion(ctx, c.Namespace, callid.Of(c))
	return err == nil && version == c.ResourceVersion
}

// archiveFailed reports a failed archive on the Call (condition Archived
// False, a Warning Event when it starts failing) and in the metrics.
func (r *CallReconciler) archiveFailed(ctx context.Context, c *switchboardv1.Call, cause error) error {
	callArchiveFailures.Inc()
	err := fmt.Errorf("archiving call: %w", cause)
	cond := apimeta.FindStatusCondition(c.Status.Conditions, switchboardv1.ArchivedCondition)
	if cond != nil && cond.Status == metav1.ConditionFalse {
		return err
	}
	r.Events.Eventf(c, nil, corev1.EventTypeWarning, "ArchiveFailed", "Archive",
		"The call could not be written to the history store; it stays in the cluster until it is: %v", cause)
	status := newStatusPatcher(r.Client, c)
	apimeta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: switchboardv1.ArchivedCondition,
		Status: metav1.ConditionFalse, Reason: switchboardv1.ReasonStoreUnavailable, ObservedGeneration: c.Generation,
		Message: "The history store could not be written; retrying: " + truncate(cause.Error(), 300)})
	if perr := r.patchStatus(ctx, c, status); perr != nil {
		return fmt.Errorf("%w (and reporting it: %v)", err, perr)
	}
	return err
}

// archiveRecovered marks a Call whose archive failed before as archived
// now, and stores that state too.
func (r *CallReconciler) archiveRecovered(ctx context.Context, c *switchboardv1.Call) error {
	cond := apimeta.FindStatusCondition(c.Status.Conditions, switchboardv1.ArchivedCondition)
	if cond == nil || cond.Status == metav1.ConditionTrue {
		return nil
	}
	status := newStatusPatcher(r.Client, c)
	apimeta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: switchboardv1.ArchivedCondition,
		Status: metav1.ConditionTrue, Reason: switchboardv1.ReasonArchived, ObservedGeneration: c.Generation,
		Message: "The call is in the history store."})
	if err := r.patchStatus(ctx, c, status); err != nil {
		return err
	}
	r.Events.Eventf(c, nil, corev1.EventTypeNormal, "Archived", "Archive", "The call is in the history store.")
	return r.History.SaveCall(ctx, c)
}

// finishedAt is when the call reached its final state: the last change of
// its Ready condition (completed, or failed).
func finishedAt(c *switchboardv1.Call) time.Time {
	if ready := apimeta.FindStatusCondition(c.Status.Conditions, switchboardv1.ReadyCondition); ready != nil {
		return ready.LastTransitionTime.Time
	}
	return c.CreationTimestamp.Time
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
