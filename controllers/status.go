package controllers

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// statusPatcher writes what a reconciler changed in an object's status, in
// one request at the end of the pass (the model is Flux's serial patcher):
// take it right after reading the object, change the object, then call
// patch once.
//
// The write is a JSON merge patch without optimistic locking: each
// reconciler's step is idempotent, so redoing one from a stale cache read
// writes the same values again, and a conflict would only cost a retry.
// Nothing is written when the status did not change (a ringing call or a
// healthy trunk checked again), which spares the API server a request per
// check.
type statusPatcher struct {
	client client.Client
	before client.Object
	// whole sends the entire status instead of the changed fields.
	whole bool
}

// newStatusPatcher remembers obj as read.
func newStatusPatcher(c client.Client, obj client.Object) *statusPatcher {
	return &statusPatcher{client: c, before: obj.DeepCopyObject().(client.Object)}
}

// newWholeStatusPatcher is newStatusPatcher for a resource whose status
// must be written in full whenever it changes: a diff leaves out fields
// that stay at their zero value, which a new resource then never shows.
func newWholeStatusPatcher(c client.Client, obj client.Object) *statusPatcher {
	p := newStatusPatcher(c, obj)
	p.whole = true
	return p
}

// patch writes obj's status if it changed since the patcher was taken and
// reports whether it wrote. On success obj is the object as stored.
func (p *statusPatcher) patch(ctx context.Context, obj client.Object) (bool, error) {
	diff := client.MergeFrom(p.before)
	data, err := diff.Data(obj)
	if err != nil {
		return false, fmt.Errorf("diffing status: %w", err)
	}
	changed, err := field(data, "status")
	if err != nil || changed == nil {
		return false, err
	}
	if p.whole {
		if diff, err = wholeStatus(obj, changed); err != nil {
			return false, err
		}
	}
	if err := p.client.Status().Patch(ctx, obj, diff); err != nil {
		return false, err
	}
	return true, nil
}

// wholeStatus is a merge patch that sets obj's entire status. The fields
// the diff changed removes (null in changed) are removed: a merge patch
// leaves a field it does not mention as it was.
func wholeStatus(obj client.Object, changed json.RawMessage) (client.Patch, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	var status, removed map[string]json.RawMessage
	if err := json.Unmarshal(data, &struct {
		Status *map[string]json.RawMessage `json:"status"`
	}{&status}); err != nil {
		return nil, fmt.Errorf("decoding status: %w", err)
	}
	if err := json.Unmarshal(changed, &removed); err != nil {
		return nil, fmt.Errorf("decoding status diff: %w", err)
	}
	if status == nil {
		status = map[string]json.RawMessage{}
	}
	for k, v := range removed {
		if string(v) == "null" {
			status[k] = v
		}
	}
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	return client.RawPatch(types.MergePatchType, body), nil
}

// field is the top-level field name of a JSON object, nil when absent.
func field(object []byte, name string) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(object, &fields); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", name, err)
	}
	return fields[name], nil
}
