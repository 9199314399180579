package controllers

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// countingReader serves one live copy of a Call and counts the reads.
type countingReader struct {
	client.Reader
	live  switchboardv1.Call
	reads int
}

func (r *countingReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.reads++
	r.live.DeepCopyInto(obj.(*switchboardv1.Call))
	return nil
}

func callAt(rv string) *switchboardv1.Call {
	return &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "call-1", ResourceVersion: rv}}
}

func TestOwnWritesBehind(t *testing.T) {
	for _, tc := range []struct {
		name, written, cached string
		wantBehind            bool
		wantReads             int
	}{
		{"never written: the cache is all there is", "", "7", false, 0},
		{"the cache shows the write", "7", "7", false, 0},
		{"the cache lags the write: skipped, the write's event is coming", "7", "5", true, 0},
		{"a later write by someone else includes this one", "7", "9", false, 0},
		{"versions that cannot be ordered: read live", "a7", "b5", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w ownWrites
			if tc.written != "" {
				w.record(callAt(tc.written))
			}
			live := &countingReader{live: *callAt(tc.written)}
			got := callAt(tc.cached)
			behind, err := w.behind(context.Background(), live, got)
			if err != nil {
				t.Fatal(err)
			}
			if behind != tc.wantBehind || live.reads != tc.wantReads {
				t.Errorf("behind = %v after %d live reads, want %v after %d", behind, live.reads, tc.wantBehind, tc.wantReads)
			}
			if tc.wantReads > 0 && got.ResourceVersion != tc.written {
				t.Errorf("read live, the call is at %q, want %q", got.ResourceVersion, tc.written)
			}
		})
	}
}
