package shard

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// PageSize is how many Calls one page of a live list holds: a reader
// holds one page at a time, whatever the number of calls.
const PageSize = 500

// EachLive calls f with each Call of namespace ("": all) that selector
// matches (nil: all), read from the apiserver a page at a time. The list
// is a consistent one (no resourceVersion), which Kubernetes 1.31 and
// later serve from the apiserver's watch cache once it has caught up with
// etcd (one progress request to etcd, no read of the objects), and 1.34
// and later page from the cache's snapshots: it sees every write made
// before it. A list with resourceVersion 0 would skip the wait, but the
// watch cache serves it whole, ignoring the limit (measured on 1.36:
// BenchmarkLiveCallsList). The Call is f's (each page is read anew), but a
// kept Call holds its page; an error from f ends the list.
func EachLive(ctx context.Context, r client.Reader, namespace string, selector labels.Selector,
	f func(*switchboardv1.Call) error) error {
	opts := &client.ListOptions{Namespace: namespace, LabelSelector: selector, Limit: PageSize}
	for {
		var page switchboardv1.CallList
		if err := r.List(ctx, &page, opts); err != nil {
			return err
		}
		for i := range page.Items {
			if err := f(&page.Items[i]); err != nil {
				return err
			}
		}
		if page.Continue == "" {
			return nil
		}
		opts.Continue = page.Continue
	}
}
