package calls_test

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// The list pages through calls that are live only, archived only, and
// both (archived, within their retention in the cluster), newest first,
// each exactly once, the live copy standing for a call in both.
func TestListMergesLiveAndArchived(t *testing.T) {
	book, want := mergeFixture(t, 60, 0)
	if got := listAll(t, book, 7); !slices.Equal(got, want) {
		t.Fatalf("listed %d calls:\n%v\nwant %d:\n%v", len(got), got, len(want), want)
	}
}

// A page longer than a chunk of the store, by rows or by bytes, is read
// chunk by chunk and merged as one.
func TestListReadsTheStoreInChunks(t *testing.T) {
	for _, tt := range []struct {
		name     string
		n, bytes int
	}{{"rows", 400, 0}, {"bytes", 40, 100_000}} {
		t.Run(tt.name, func(t *testing.T) {
			book, want := mergeFixture(t, tt.n, tt.bytes)
			if got := listAll(t, book, 1000); !slices.Equal(got, want) {
				t.Fatalf("listed %d calls:\n%v\nwant %d:\n%v", len(got), got, len(want), want)
			}
		})
	}
}

// mergeFixture stores n calls, a third archived only, a third archived and
// live, a third live only, each with metadata of about pad bytes; it
// returns the book and their ids newest first.
func mergeFixture(t *testing.T, n, pad int) (*calls.Book, []string) {
	t.Helper()
	ctx := context.Background()
	store, err := history.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var live []client.Object
	var want []string
	for i := range n {
		id := fmt.Sprintf("call_%032x", i)
		c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: "call-" + id[5:],
			ResourceVersion: "1", CreationTimestamp: metav1.NewTime(base.Add(time.Duration(i) * time.Second))},
			Status: switchboardv1.CallStatus{CallID: id, Phase: switchboardv1.CallEnded}}
		if pad > 0 {
			c.Spec.Metadata = &apiextensionsv1.JSON{Raw: []byte(`{"pad":"` + strings.Repeat("x", pad) + `"}`)}
		}
		want = append(want, id)
		switch i % 3 {
		case 0: // archived, gone from the cluster
			mustSave(t, store, c)
		case 1: // archived, still in the cluster
			mustSave(t, store, c)
			live = append(live, c.DeepCopy())
		case 2: // live only
			c.Status.Phase = switchboardv1.CallInProgress
			live = append(live, c.DeepCopy())
		}
	}
	slices.Reverse(want) // newest first
	return &calls.Book{Live: testsupport.FakeCache(t, live...), History: store}, want
}

// listAll pages through the book's calls limit at a time.
func listAll(t *testing.T, book *calls.Book, limit int) []string {
	t.Helper()
	var got []string
	q := history.CallQuery{Limit: limit}
	for range 100 {
		page, err := book.List(context.Background(), "org", q)
		if err != nil {
			t.Fatal(err)
		}
		for i := range page.Calls {
			got = append(got, page.Calls[i].Status.CallID)
		}
		if !page.More {
			break
		}
		last := history.KeyOf(&page.Calls[len(page.Calls)-1])
		q.After = &last
	}
	return got
}

func mustSave(t *testing.T, s history.Store, c *switchboardv1.Call) {
	t.Helper()
	if err := s.SaveCall(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

// Counts counts live and archived calls together, a call in both once, by
// its place in the range.
func TestCountsMergesLiveAndArchived(t *testing.T) {
	book, _ := mergeFixture(t, 60, 0)
	from := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	counts, err := book.Counts(context.Background(), "org", from.Add(-time.Hour), from.Add(23*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, c := range counts {
		if c.Hour != 1 {
			t.Errorf("a count in hour %d, want 1: %+v", c.Hour, c)
		}
		got[c.Status] += c.Calls
	}
	if want := map[string]int{"ended": 40, "in_progress": 20}; !maps.Equal(got, want) {
		t.Fatalf("counted %v, want %v", got, want)
	}
}
