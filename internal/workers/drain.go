package workers

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// Drainer lets a stopping worker finish its calls: it is marked draining
// at once (the pool assigns it nothing new), then waits until it carries
// no unprocessed call, or until Timeout, whichever comes first.
type Drainer struct {
	Heartbeat *Heartbeat
	// Unprocessed counts the worker's calls not yet processed.
	Unprocessed func(ctx context.Context) (int, error)
	Timeout     time.Duration
	// Poll is how often the count is read again.
	Poll  time.Duration
	Clock clock.WithTicker
	Log   logr.Logger
}

// Drain returns once the worker's calls are done or Timeout passed; the
// caller then stops the process, hanging up what is left.
func (d *Drainer) Drain(ctx context.Context) {
	if d.Timeout <= 0 {
		return
	}
	d.Heartbeat.Drain()
	started := d.Clock.Now()
	deadline := d.Clock.NewTimer(d.Timeout)
	defer deadline.Stop()
	poll := d.Clock.NewTicker(d.Poll)
	defer poll.Stop()
	for {
		n, err := d.Unprocessed(ctx)
		switch {
		case err != nil:
			d.Log.Error(err, "counting the calls left to drain")
		case n == 0:
			d.Log.Info("drained: every call finished", "worker", d.Heartbeat.Name, "took", d.Clock.Since(started).String())
			return
		}
		select {
		case <-deadline.C():
			d.Log.Info("drain timed out: hanging up the calls left", "worker", d.Heartbeat.Name, "calls", n)
			return
		case <-ctx.Done():
			return
		case <-poll.C():
		}
	}
}
