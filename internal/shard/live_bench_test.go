package shard_test

import (
	"context"
	"fmt"
	"testing"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/shard"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// What one read of an organization's live calls costs the REST API now
// that no replica caches them all: the whole namespace read a page at a
// time (EachLive), from the apiserver's watch cache, against the same
// list read from etcd (a consistent list). SWITCHBOARD_BENCH_LIVE_CALLS
// sets the number of calls (1,000).
func BenchmarkLiveCallsList(b *testing.B) {
	n := testsupport.BenchCount(b, "SWITCHBOARD_BENCH_LIVE_CALLS", 1000)
	ctx := context.Background()
	ns := cp.NewNamespace(b, "bench-live-")
	var g errgroup.Group
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			c := testsupport.BenchCall(ns, i)
			c.ResourceVersion, c.Labels = "", map[string]string{switchboardv1.WorkerLabel: fmt.Sprintf("worker-%d", i%3)}
			return cp.Client.Create(ctx, c)
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	reader, err := client.New(cp.Manager, client.Options{Scheme: scheme()})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("watch-cache", func(b *testing.B) {
		testsupport.Measure(b, func() error { return countAll(ctx, reader, ns, n) })
	})
	b.Run("etcd", func(b *testing.B) {
		testsupport.Measure(b, func() error {
			seen := 0
			opts := &client.ListOptions{Namespace: ns, Limit: shard.PageSize}
			for {
				var page switchboardv1.CallList
				if err := reader.List(ctx, &page, opts); err != nil {
					return err
				}
				seen += len(page.Items)
				if page.Continue == "" {
					return expect(seen, n)
				}
				opts.Continue = page.Continue
			}
		})
	})
}

func countAll(ctx context.Context, r client.Reader, ns string, n int) error {
	seen := 0
	if err := shard.EachLive(ctx, r, ns, nil, func(*switchboardv1.Call) error { seen++; return nil }); err != nil {
		return err
	}
	return expect(seen, n)
}

func expect(seen, n int) error {
	if seen != n {
		return fmt.Errorf("listed %d calls, want %d", seen, n)
	}
	return nil
}
