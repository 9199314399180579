package calls

import (
	"context"
	"fmt"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/shard"
)

// Counts counts the calls of namespace created in [from, to), live and
// archived together, by hour since from, status and disposition, without
// reading them into memory: the store counts those it holds, and the
// cluster's calls are added unless the store holds them too.
//
// Only a finished call can be in both (it is archived when it finishes,
// and stays in the cluster for its retention). Those the cluster holds are
// looked up among the ids of the store's calls created since the oldest of
// them, which is about a retention's worth, not a day's.
func (b *Book) Counts(ctx context.Context, namespace string, from, to time.Time) ([]history.CallCount, error) {
	counts, err := b.History.CountCalls(ctx, namespace, from, to)
	if err != nil {
		return nil, err
	}
	live, err := b.liveIn(ctx, namespace, from, to)
	if err != nil {
		return nil, err
	}
	if err := b.dropArchived(ctx, namespace, live); err != nil {
		return nil, err
	}
	for _, c := range live {
		counts = append(counts, c.count)
	}
	return counts, nil
}

// liveCount is what Counts keeps of a live call: not the call.
type liveCount struct {
	count     history.CallCount
	createdAt time.Time
	final     bool
}

// liveIn counts the cluster's calls of namespace created in [from, to),
// by call id, read from the apiserver a page at a time.
func (b *Book) liveIn(ctx context.Context, namespace string, from, to time.Time) (map[string]liveCount, error) {
	live := map[string]liveCount{}
	err := shard.EachLive(ctx, b.Live, namespace, nil, func(c *switchboardv1.Call) error {
		if at := history.KeyOf(c).CreatedAt; !at.Before(from) && at.Before(to) {
			live[callid.Of(c)] = liveCount{count: countOf(c, from), createdAt: at, final: c.CurrentPhase().Final()}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing live calls: %w", err)
	}
	return live, nil
}

// dropArchived removes from live the finished calls the store holds.
func (b *Book) dropArchived(ctx context.Context, namespace string, live map[string]liveCount) error {
	var oldest *time.Time
	for _, c := range live {
		if c.final && (oldest == nil || c.createdAt.Before(*oldest)) {
			oldest = &c.createdAt
		}
	}
	if oldest == nil {
		return nil
	}
	return b.History.EachCallIDSince(ctx, namespace, *oldest, func(id string) { delete(live, id) })
}

func countOf(c *switchboardv1.Call, from time.Time) history.CallCount {
	n := history.CallCount{Hour: int(history.KeyOf(c).CreatedAt.Sub(from) / time.Hour), Status: string(c.CurrentPhase()),
		Disposition: string(c.Status.Disposition), Calls: 1}
	if c.Status.DurationMS != nil {
		n.DurationMS = *c.Status.DurationMS
	}
	return n
}
