package controllers

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/recording"
)

// failingDeletes fails Delete while fail is set.
type failingDeletes struct {
	recording.Store
	fail bool
}

func (f *failingDeletes) Delete(ctx context.Context, key string) error {
	if f.fail {
		return errors.New("store unavailable")
	}
	return f.Store.Delete(ctx, key)
}

func TestRecordingRetentionRound(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	store, err := history.Open(ctx, "sqlite:"+filepath.Join(dir, "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	local, err := recording.NewLocal(recording.LocalConfig{Dir: filepath.Join(dir, "rec"),
		BaseURL: "http://example.test", SigningKey: bytes.Repeat([]byte("k"), recording.MinSigningKeyLen)})
	if err != nil {
		t.Fatal(err)
	}
	recordings := &failingDeletes{Store: local}

	call := func(id string, storedAgo time.Duration) *switchboardv1.Call {
		stored := metav1.NewTime(now.Add(-storedAgo))
		c := &switchboardv1.Call{
			ObjectMeta: metav1.ObjectMeta{Namespace: "org-a", Name: id, ResourceVersion: "5",
				CreationTimestamp: metav1.NewTime(now.Add(-48 * time.Hour))},
			Status: switchboardv1.CallStatus{CallID: "call_" + id, Phase: switchboardv1.CallEnded,
				Recording: &switchboardv1.CallRecording{Key: "org-a/call_" + id + ".wav", ContentType: "audio/wav",
					SizeBytes: 4, StoredAt: &stored}},
		}
		if _, err := local.Put(ctx, c.Status.Recording.Key, "audio/wav", bytes.NewReader([]byte("RIFF"))); err != nil {
			t.Fatal(err)
		}
		if err := store.SaveCall(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	expired := call("expired", 25*time.Hour)
	live := call("live", 26*time.Hour) // still in the cluster
	recent := call("recent", time.Hour)

	scheme := runtime.NewScheme()
	if err := switchboardv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	r := &RecordingRetention{History: store, Recordings: recordings, Retention: 24 * time.Hour,
		Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(live.DeepCopy()).Build(),
		Clock:  clocktesting.NewFakeClock(now), Log: logr.Discard()}

	hasRecording := func(c *switchboardv1.Call) bool {
		t.Helper()
		stored, err := store.GetCall(ctx, c.Namespace, c.Status.CallID)
		if err != nil {
			t.Fatal(err)
		}
		_, linkErr := local.Link(ctx, c.Status.Recording.Key, time.Minute)
		if (stored.Status.Recording != nil) != (linkErr == nil) {
			t.Fatalf("%s: record has a recording %v, but the file's Link gave %v", c.Name, stored.Status.Recording != nil, linkErr)
		}
		return stored.Status.Recording != nil
	}

	// A failed delete keeps everything, for the next round.
	recordings.fail = true
	r.round(ctx)
	if !hasRecording(expired) {
		t.Fatal("a failed delete removed the recording from the record")
	}

	recordings.fail = false
	r.round(ctx)
	for _, c := range []struct {
		call *switchboardv1.Call
		want bool
	}{{expired, false}, {live, true}, {recent, true}} {
		if got := hasRecording(c.call); got != c.want {
			t.Errorf("%s: has its recording %v, want %v", c.call.Name, got, c.want)
		}
	}
	got, err := store.GetCall(ctx, "org-a", "call_expired")
	if err != nil || got.Status.Phase != switchboardv1.CallEnded || got.ResourceVersion != "5" {
		t.Fatalf("the expired call's record = %+v, %v; want it kept as it was but for the recording", got, err)
	}
}
