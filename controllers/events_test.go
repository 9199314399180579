package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func TestWarningsOnlyDropsNormalEvents(t *testing.T) {
	fake := events.NewFakeRecorder(10)
	rec := WarningsOnly{EventRecorder: fake}
	call := &switchboardv1.Call{}
	rec.Eventf(call, nil, corev1.EventTypeNormal, "Dialing", "Dial", "Calling %s", "+14155551234")
	rec.Eventf(call, nil, corev1.EventTypeWarning, "ArchiveFailed", "Archive", "store down: %s", "refused")
	close(fake.Events)
	var got []string
	for e := range fake.Events {
		got = append(got, e)
	}
	if len(got) != 1 || got[0] != "Warning ArchiveFailed store down: refused" {
		t.Fatalf("recorded %q, want only the Warning", got)
	}
}

// A stored recording within one stereo frame of --recording-max-bytes
// stopped at it (audio.Recorder.Limit), and its Call says so.
func TestRecordingReachedItsBound(t *testing.T) {
	r := &CallReconciler{RecordingMaxBytes: 10_000}
	for size, want := range map[int64]bool{10_000: true, 9_997: true, 9_996: false, 8_044: false} {
		if got := r.reachedBound(size); got != want {
			t.Errorf("%d bytes: reached %v, want %v", size, got, want)
		}
	}
	if (&CallReconciler{}).reachedBound(1 << 40) {
		t.Error("without a bound, a recording reached it")
	}
}
