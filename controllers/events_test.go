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
