package shard

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// PageSize is how many Calls one page of a live list holds: a reader
// holds one page at a time, whatever the number of calls.
const PageSize = 500

// EachLive calls f with each Call of namespace ("": all) that selector
// matches (nil: all), read from the apiserver a page at a time. The first
// page is asked with resourceVersion 0, so the apiserver's watch cache
// serves it (and, on Kubernetes 1.34 and later, the pages after it, from
// the cache's snapshot) rather than etcd: the list may be a moment behind
// the latest write, as an informer's cache is. The Call is f's (each page
// is read anew), but a kept Call holds its page; an error from f ends the
// list.
func EachLive(ctx context.Context, r client.Reader, namespace string, selector labels.Selector,
	f func(*switchboardv1.Call) error) error {
	opts := &client.ListOptions{Namespace: namespace, LabelSelector: selector, Limit: PageSize,
		Raw: &metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}}
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
		// A continued list names its resourceVersion in the token.
		opts.Continue, opts.Raw = page.Continue, nil
	}
}
