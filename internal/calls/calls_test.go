package calls_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// The list pages through calls that are live only, archived only, and
// both (archived, within their retention in the cluster), newest first,
// each exactly once, the live copy standing for a call in both.
func TestListMergesLiveAndArchived(t *testing.T) {
	ctx := context.Background()
	store, err := history.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	scheme := runtimeScheme(t)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var live []client.Object
	var want []string
	for i := range 60 {
		id := fmt.Sprintf("call_%032x", i)
		c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: "call-" + id[5:],
			ResourceVersion: "1", CreationTimestamp: metav1.NewTime(base.Add(time.Duration(i) * time.Second))},
			Status: switchboardv1.CallStatus{CallID: id, Phase: switchboardv1.CallEnded}}
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
	book := &calls.Book{Cache: fake.NewClientBuilder().WithScheme(scheme).WithObjects(live...).Build(), History: store}
	var got []string
	q := history.CallQuery{Limit: 7}
	for range 20 {
		page, err := book.List(ctx, "org", q)
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
	if !slices.Equal(got, want) {
		t.Fatalf("listed %d calls:\n%v\nwant %d:\n%v", len(got), got, len(want), want)
	}
}

func mustSave(t *testing.T, s history.Store, c *switchboardv1.Call) {
	t.Helper()
	if err := s.SaveCall(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func runtimeScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := switchboardv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}
