package workers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/shard"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// Sweeper runs on the leader: it finds the Calls of workers that are lost
// (their Lease lapsed, or was deleted by a worker that stopped) and hands
// them to live ones. A call that was in progress there is over: its
// audio and signalling died with the worker, so it ends worker_lost and
// is never dialed again; the worker it moves to stores its end, sends its
// events and archives it. A queued call moves to the least-loaded live
// worker (or waits unassigned for the Assigner when none has room).
type Sweeper struct {
	// Client writes Calls.
	Client client.Client
	// Live lists the lost workers' Calls: the manager's cache holds only
	// this worker's (package shard). The list is filtered by the apiserver
	// and served from its watch cache, and is empty unless a worker was
	// lost.
	Live client.Reader
	Pool *Pool
	// Self is this replica's worker: alive, as it is running this.
	Self     string
	Interval time.Duration
	Clock    clock.WithTicker
	Log      logr.Logger

	once  sync.Once
	nudge chan struct{}
}

// sweepWriters bounds the writes of one sweep in flight: a lost worker's
// hundreds of calls move in a few round trips, not one after the other.
const sweepWriters = 16

// Nudge asks for a sweep now: a worker's Lease was deleted (it stopped).
func (s *Sweeper) Nudge() {
	s.init()
	select {
	case s.nudge <- struct{}{}:
	default: // one is pending already
	}
}

func (s *Sweeper) init() {
	s.once.Do(func() { s.nudge = make(chan struct{}, 1) })
}

// Start sweeps every Interval until ctx ends.
func (s *Sweeper) Start(ctx context.Context) error {
	s.init()
	t := s.Clock.NewTicker(s.Interval)
	defer t.Stop()
	for {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.Log.Error(err, "moving the calls of lost workers")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		case <-s.nudge:
		}
	}
}

// Sweep moves the calls of lost workers once; it returns how many moved.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	alive, err := s.alive(ctx)
	if err != nil {
		return 0, err
	}
	calls, err := s.lostCalls(ctx, alive)
	if err != nil {
		return 0, err
	}
	var (
		mu    sync.Mutex
		moved int
		errs  []error
		g     errgroup.Group
	)
	g.SetLimit(sweepWriters)
	for _, c := range calls {
		g.Go(func() error {
			err := s.move(ctx, c)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/%s: %w", c.Namespace, c.Name, err))
			} else {
				moved++
			}
			return nil
		})
	}
	_ = g.Wait()
	return moved, errors.Join(errs...)
}

// lostCalls lists the Calls assigned to a worker that is not alive.
func (s *Sweeper) lostCalls(ctx context.Context, alive map[string]bool) ([]*switchboardv1.Call, error) {
	assigned, err := labels.NewRequirement(Label, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	notAlive, err := labels.NewRequirement(Label, selection.NotIn, slices.Collect(maps.Keys(alive)))
	if err != nil {
		return nil, err
	}
	var lost []*switchboardv1.Call
	err = shard.EachLive(ctx, s.Live, "", labels.NewSelector().Add(*assigned, *notAlive), func(c *switchboardv1.Call) error {
		lost = append(lost, c.DeepCopy())
		return nil
	})
	return lost, err
}

// alive is the set of workers whose Lease is current, and this one.
func (s *Sweeper) alive(ctx context.Context) (map[string]bool, error) {
	ws, err := s.Pool.Workers(ctx)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	alive := map[string]bool{s.Self: true}
	for _, w := range ws {
		if w.Alive(now) {
			alive[w.Name] = true
		}
	}
	return alive, nil
}

// move ends a lost in-progress call, then hands the call to a live worker.
func (s *Sweeper) move(ctx context.Context, c *switchboardv1.Call) error {
	from := c.Labels[Label]
	if c.CurrentPhase() == switchboardv1.CallInProgress {
		if err := s.endLost(ctx, c); err != nil {
			return err
		}
	}
	to := s.Self // what is left after the call's end is cheap: the leader takes it
	if c.CurrentPhase() == switchboardv1.CallQueued {
		picked, err := s.Pool.Pick(ctx)
		switch {
		case errors.Is(err, ErrNoCapacity):
			to = "" // unassigned: the Assigner places it when room frees
		case err != nil:
			return err
		default:
			to = picked
		}
	}
	if err := Assign(ctx, s.Client, c, to); err != nil {
		return err
	}
	s.Log.Info("moved a call from a lost worker", "call", client.ObjectKeyFromObject(c), "from", from, "to", to,
		"phase", c.CurrentPhase())
	return nil
}

// endLost ends a call its lost worker was carrying. Nobody can tell how it
// ended on the wire, so it ends now: answered if its answer was stored,
// else carrier_failure (as after an operator restart). The write is
// conditional on the version read, so a worker that was only slow, and
// wrote its own end meanwhile, wins.
func (s *Sweeper) endLost(ctx context.Context, c *switchboardv1.Call) error {
	before := c.DeepCopy()
	now := s.Clock.Now()
	c.Status.Phase = switchboardv1.CallEnded
	c.Status.Disposition = switchboardv1.DispositionCarrierFailure
	c.Status.EndedAt = &metav1.MicroTime{Time: now}
	var talked time.Duration
	reason := switchboardv1.ReasonAwaitingAnalysis
	if c.Status.AnsweredAt != nil {
		c.Status.Disposition = switchboardv1.DispositionAnswered
		talked = max(0, now.Sub(c.Status.AnsweredAt.Time))
		reason = switchboardv1.ReasonAwaitingRecording
	}
	c.Status.DurationMS = new(talked.Milliseconds())
	c.Status.Duration = talked.Round(time.Second).String()
	c.Status.DisconnectionReason = telephony.WorkerLost
	apimeta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: switchboardv1.ReadyCondition,
		Status: metav1.ConditionFalse, Reason: reason, ObservedGeneration: c.Generation,
		Message: "The replica carrying the call was lost; post-call processing is under way."})
	return s.Client.Status().Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// Assign labels c with worker ("" removes the label: unassigned). The
// patch is conditional on the version read, so two assigners never both
// win.
func Assign(ctx context.Context, c client.Client, call *switchboardv1.Call, worker string) error {
	before := call.DeepCopy()
	labels := call.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	if worker == "" {
		delete(labels, Label)
	} else {
		labels[Label] = worker
	}
	call.SetLabels(labels)
	return c.Patch(ctx, call, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}
