package controllers

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/recording"
)

const (
	// recordingRetentionBatch is how many calls one round looks at.
	recordingRetentionBatch = 100
	// recordingRetentionInterval bounds the time between rounds; a short
	// retention (a test's) is checked a quarter of it apart, but never
	// more often than recordingRetentionMinInterval.
	recordingRetentionInterval    = time.Minute
	recordingRetentionMinInterval = 100 * time.Millisecond
)

var (
	recordingsDeleted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchboard_recordings_deleted_total",
		Help: "Recordings of archived calls deleted from the recording store once their retention had passed.",
	})
	recordingDeletionFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchboard_recording_deletion_failures_total",
		Help: "Attempts to delete an expired recording, or to record its deletion in the history store, that failed; retried at the next round.",
	})

	transcriptsDeleted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchboard_transcripts_deleted_total",
		Help: "Call transcripts deleted from the history store once the recording retention had passed.",
	})
	transcriptDeletionFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchboard_transcript_deletion_failures_total",
		Help: "Rounds of transcript retention that failed to delete expired transcripts; retried at the next round.",
	})
)

func init() {
	metrics.Registry.MustRegister(recordingsDeleted, recordingDeletionFailures, transcriptsDeleted, transcriptDeletionFailures)
}

// RecordingRetention deletes the recordings of archived calls once
// Retention has passed since they were stored, and then removes the
// recording from the call's record in the history store: the call keeps
// everything else, and the REST API shows it without a recording
// (recording_url null, GET .../recording 404).
//
// Transcripts are personal data like recordings and follow the same
// retention: each round deletes those stored more than Retention ago (GET
// .../transcript then answers 404). Their deletion needs no care for Calls
// still in the cluster: the call reconciler writes a transcript once, when
// the call ends, and never again.
//
// Only calls that have left the cluster are handled: a Call still there
// (found through Client, the manager's cache) is skipped and handled at a
// round after it is gone, so that the call reconciler never writes the
// recording back into the history store. Its deletion is therefore late by
// up to --call-retention if --recording-retention is shorter; set it
// longer. A failed deletion is logged and retried at the next round. It
// runs on the leader.
type RecordingRetention struct {
	// History holds the archived calls.
	History history.Store
	// Recordings holds their recordings.
	Recordings recording.Store
	// Client reads Calls: whether one is still in the cluster.
	Client client.Reader
	// Retention is how long a recording is kept after it was stored; it
	// must be positive.
	Retention time.Duration
	Clock     clock.Clock
	Log       logr.Logger
}

// NeedLeaderElection: one replica, the leader, deletes recordings.
func (r *RecordingRetention) NeedLeaderElection() bool { return true }

// Start deletes expired recordings at once and then at every interval,
// until ctx ends. A round that found a full batch to delete is followed by
// another at once.
func (r *RecordingRetention) Start(ctx context.Context) error {
	if r.History == nil || r.Recordings == nil || r.Client == nil || r.Clock == nil || r.Retention <= 0 {
		return errors.New("recording retention needs the history store, the recording store, a client, a clock and a positive retention")
	}
	interval := max(min(recordingRetentionInterval, r.Retention/4), recordingRetentionMinInterval)
	for {
		wait := interval
		if r.round(ctx) {
			wait = 0
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.Clock.After(wait):
		}
	}
}

// round handles up to one batch of calls whose recordings have expired. It
// reports whether there may be more to delete right away: the batch was
// full and some of it was deleted.
func (r *RecordingRetention) round(ctx context.Context) (more bool) {
	cutoff := r.Clock.Now().Add(-r.Retention)
	r.expireTranscripts(ctx, cutoff)
	calls, err := r.History.CallsWithRecordingStoredBefore(ctx, cutoff, recordingRetentionBatch)
	if err != nil {
		if ctx.Err() == nil {
			r.Log.Error(err, "Listing calls with expired recordings failed; retrying at the next round")
		}
		return false
	}
	deleted := 0
	for i := range calls {
		if ctx.Err() != nil {
			return false
		}
		if r.expire(ctx, &calls[i]) {
			deleted++
		}
	}
	return len(calls) == recordingRetentionBatch && deleted > 0
}

// expireTranscripts deletes the transcripts stored before cutoff; a
// failure is logged and retried at the next round.
func (r *RecordingRetention) expireTranscripts(ctx context.Context, cutoff time.Time) {
	n, err := r.History.DeleteTranscriptsStoredBefore(ctx, cutoff)
	if err != nil {
		if ctx.Err() == nil {
			transcriptDeletionFailures.Inc()
			r.Log.Error(err, "Deleting expired transcripts failed; retrying at the next round")
		}
		return
	}
	transcriptsDeleted.Add(float64(n))
}

// expire deletes c's recording and then saves c without it, unless c is
// still in the cluster. It reports whether it did.
func (r *RecordingRetention) expire(ctx context.Context, c *switchboardv1.Call) bool {
	log := r.Log.WithValues("call", client.ObjectKeyFromObject(c), "callID", c.Status.CallID)
	var live switchboardv1.Call
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(c), &live); {
	case err == nil:
		return false // still in the cluster: handled once it has left
	case !apierrors.IsNotFound(err):
		log.Error(err, "Checking whether the call is still in the cluster failed; retrying at the next round")
		return false
	}
	key := c.Status.Recording.Key
	if err := r.Recordings.Delete(ctx, key); err != nil {
		recordingDeletionFailures.Inc()
		log.Error(err, "Deleting an expired recording failed; retrying at the next round", "key", key)
		return false
	}
	// The same resourceVersion: the store replaces a state with an equal
	// one, and the call's record no longer points at a recording.
	gone := c.DeepCopy()
	gone.Status.Recording = nil
	if err := r.History.SaveCall(ctx, gone); err != nil {
		recordingDeletionFailures.Inc()
		log.Error(err, "Recording the deletion of an expired recording failed; retrying at the next round", "key", key)
		return false
	}
	recordingsDeleted.Inc()
	log.V(1).Info("Deleted an expired recording", "key", key,
		"storedAt", c.Status.Recording.StoredAt)
	return true
}
