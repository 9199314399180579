package history

import (
	"context"
	"time"

	"github.com/go-logr/logr"
)

// DialSweeper removes, on the leader, the records of dials older than
// MaxAge: they guard a call only between its dial and its status write.
type DialSweeper struct {
	Store    Dials
	Interval time.Duration // 10 minutes when zero
	MaxAge   time.Duration // a day when zero
	Now      func() time.Time
	Log      logr.Logger
}

// NeedLeaderElection: one replica sweeps.
func (s *DialSweeper) NeedLeaderElection() bool { return true }

// Start sweeps until ctx ends.
func (s *DialSweeper) Start(ctx context.Context) error {
	interval, maxAge, now := s.Interval, s.MaxAge, s.Now
	if interval <= 0 {
		interval = 10 * time.Minute
	}
	if maxAge <= 0 {
		maxAge = 24 * time.Hour
	}
	if now == nil {
		now = time.Now
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.Store.DeleteDialsBefore(ctx, now().Add(-maxAge)); err != nil && ctx.Err() == nil {
			s.Log.Error(err, "removing old dial records")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
