package campaigns

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/quota"
)

// Placer places one call (calls.Placer).
type Placer interface {
	Place(ctx context.Context, ns string, req calls.Request, callID string) (*calls.Placed, error)
}

// CallReader reads a call, live or archived (calls.Book).
type CallReader interface {
	Get(ctx context.Context, ns, id string) (*switchboardv1.Call, error)
}

// LimitReader reads an organization's limits (quota.Admission).
type LimitReader interface {
	Limits(ctx context.Context, ns string) (quota.Limits, error)
}

// DefaultTick is how often the runner looks at its campaigns: a pause
// takes effect within it, and calls go out in tick-sized steps.
const DefaultTick = 200 * time.Millisecond

// Runner dials the contacts of running campaigns. It runs on the leader
// only, and keeps nothing in memory that a new leader needs: each contact's
// attempt is claimed in the store before its call is placed, under a call
// id derived from the campaign, the contact and the attempt, so a leader
// that dies between the claim and the call leaves the next one an attempt
// to finish, never one to repeat.
type Runner struct {
	// Cache reads Campaigns.
	Cache    client.Reader
	Contacts history.Contacts
	Calls    CallReader
	Placer   Placer
	Limits   LimitReader
	Clock    clock.WithTicker
	Tick     time.Duration
	Log      logr.Logger
	// Placed, when set, is told of every call placed.
	Placed func(c *switchboardv1.Campaign)

	pacers map[types.NamespacedName]*pacer
}

// NeedLeaderElection: one dialer of a campaign at a time.
func (r *Runner) NeedLeaderElection() bool { return true }

// Start looks at the campaigns every tick until ctx ends.
func (r *Runner) Start(ctx context.Context) error {
	ticker := r.Clock.NewTicker(r.tick())
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			if err := r.Pass(ctx); err != nil && ctx.Err() == nil {
				r.Log.Error(err, "dialing campaigns")
			}
		}
	}
}

func (r *Runner) tick() time.Duration {
	if r.Tick <= 0 {
		return DefaultTick
	}
	return r.Tick
}

// Pass settles the attempts in flight of every campaign and places the
// calls that are due. The campaigns of one organization share its limits
// evenly.
func (r *Runner) Pass(ctx context.Context) error {
	var list switchboardv1.CampaignList
	if err := r.Cache.List(ctx, &list); err != nil {
		return err
	}
	byOrg := map[string][]*switchboardv1.Campaign{}
	for i := range list.Items {
		c := &list.Items[i]
		if Active(c) {
			byOrg[c.Namespace] = append(byOrg[c.Namespace], c)
		}
	}
	seen := map[types.NamespacedName]bool{}
	for ns, cs := range byOrg {
		limits, err := r.Limits.Limits(ctx, ns)
		if err != nil {
			r.Log.Error(err, "reading the organization's limits", "namespace", ns)
			continue
		}
		for i, c := range cs {
			seen[client.ObjectKeyFromObject(c)] = true
			if err := r.step(ctx, c, shareOf(limits, len(cs), i)); err != nil {
				r.Log.Error(err, "dialing a campaign", "namespace", c.Namespace, "campaign", c.Name)
			}
		}
	}
	for key := range r.pacers {
		if !seen[key] {
			delete(r.pacers, key)
		}
	}
	return nil
}

// Active reports whether a campaign's contacts are being worked on: it
// runs, or it is paused or canceled with calls in flight, whose outcomes
// are still recorded (though nothing new is placed).
func Active(c *switchboardv1.Campaign) bool {
	switch c.Status.State {
	case switchboardv1.CampaignRunning, switchboardv1.CampaignPaused:
		return true
	case switchboardv1.CampaignCanceled:
		return c.Status.Dialing > 0
	}
	return false
}

// share is one campaign's part of its organization's limits; zero is none.
type share struct {
	perSec float64
	active int
}

// shareOf splits limits among n campaigns; the i-th gets its part (the
// first ones a call more when the calls do not divide evenly).
func shareOf(l quota.Limits, n, i int) share {
	s := share{perSec: l.CreateRate / float64(n)}
	if l.ActiveCalls > 0 {
		s.active = max(1, l.ActiveCalls/n)
		if i < l.ActiveCalls%n {
			s.active++
		}
	}
	return s
}
