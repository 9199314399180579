package shard_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/shard"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// What one read of an organization's live calls costs the REST API now
// that no replica caches them all: the whole namespace read a page at a
// time (EachLive) from the apiserver's watch cache. SWITCHBOARD_BENCH_LIVE_CALLS
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
	b.Run("consistent-paged", func(b *testing.B) {
		pages := &countingReader{Reader: reader}
		before := cacheLists(b)
		testsupport.Measure(b, func() error { return countAll(ctx, pages, ns, n) })
		b.ReportMetric(float64(pages.lists)/float64(b.N), "pages/op")
		// Every page came from the watch cache, none from etcd.
		b.ReportMetric(float64(cacheLists(b)-before)/float64(b.N), "cache-pages/op")
	})
	// What EachLive does not do: resourceVersion 0 skips the wait for the
	// watch cache to catch up, but is served whole whatever the limit.
	b.Run("rv0-whole", func(b *testing.B) {
		testsupport.Measure(b, func() error {
			var all switchboardv1.CallList
			err := reader.List(ctx, &all, &client.ListOptions{Namespace: ns, Limit: shard.PageSize,
				Raw: &metav1.ListOptions{ResourceVersion: "0"}})
			if err != nil {
				return err
			}
			return expect(len(all.Items), n)
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

// countingReader counts the lists (pages) read through it.
type countingReader struct {
	client.Reader
	lists int
}

func (r *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.lists++
	return r.Reader.List(ctx, list, opts...)
}

// cacheLists is the apiserver's count of lists of Calls its watch cache
// served (apiserver_cache_list_total).
func cacheLists(b *testing.B) int {
	b.Helper()
	raw, err := kubernetes.NewForConfigOrDie(cp.Admin).RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for line := range strings.SplitSeq(string(raw), "\n") {
		if strings.HasPrefix(line, "apiserver_cache_list_total{") && strings.Contains(line, `resource="calls"`) {
			fields := strings.Fields(line)
			v, err := strconv.Atoi(fields[len(fields)-1])
			if err != nil {
				b.Fatal(err)
			}
			n += v
		}
	}
	return n
}
