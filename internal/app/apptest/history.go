package apptest

// Calls leave the cluster after --call-retention and live on in the
// history store: archive then delete, the same call object from GET,
// GET /v1/calls across the live/archived boundary, and a store that goes
// away (PostgreSQL stopped mid-run) without losing a call.

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

const ShortRetention = 500 * time.Millisecond

// WaitRemoved waits until the call's resource has left the cluster.
func WaitRemoved(t *testing.T, ns, id string) {
	t.Helper()
	NewWithT(t).Eventually(func() bool {
		err := K8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: CallName(id)}, &switchboardv1.Call{})
		return apierrors.IsNotFound(err)
	}, 20*time.Second, 50*time.Millisecond).Should(BeTrue(), "call %s still in the cluster", id)
}

// WithoutLink drops the recording link, which is signed afresh at each read.
func WithoutLink(call map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range call {
		if k != "recording_url" {
			out[k] = v
		}
	}
	return out
}

// ListAll walks every page of query with page size limit and returns the ids.
func ListAll(t *testing.T, key, query string, limit int) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for page := 0; page < 100; page++ {
		q, err := url.ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		q.Set("limit", strconv.Itoa(limit))
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := Do(t, "GET", "/v1/calls?"+q.Encode(), key, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("GET /v1/calls?%s = %d %s", q.Encode(), r.Status, r.Raw)
		}
		data := r.Body["data"].([]any)
		if len(data) > limit {
			t.Fatalf("page of %d calls for limit %d", len(data), limit)
		}
		for _, c := range data {
			ids = append(ids, c.(map[string]any)["call_id"].(string))
		}
		if r.Body["has_more"] != true {
			if r.Body["next_cursor"] != nil {
				t.Fatalf("last page has next_cursor %v", r.Body["next_cursor"])
			}
			return ids
		}
		cursor = r.Body["next_cursor"].(string)
	}
	t.Fatal("more than 100 pages")
	return nil
}
