package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// WarningsOnly records Warning Events and drops Normal ones. Each Event is
// an apiserver write; the Normal ones of a call (dialing, answered, ended,
// analyzed) would be four per call, so outside development they are off
// and the call's status and history tell its story instead.
type WarningsOnly struct{ events.EventRecorder }

// Eventf records the event if it is a Warning.
func (w WarningsOnly) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if eventtype == corev1.EventTypeNormal {
		return
	}
	w.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
