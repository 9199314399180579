// Package deliveries turns call events into delivery records (history.Delivery,
// kept in the history store) and back into signed requests: which events a call
// has reached, the delivery of each (call, event, endpoint) with its stable
// id, the body as of sending, the signing secrets of an endpoint, and what
// an attempt's result does to a delivery. The HTTP side (signing, sending,
// the address guard) is the parent package, webhook.
package deliveries

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callview"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/webhook"
)

const (
	idPrefix   = "dlv_"
	namePrefix = "dlv-"
)

// IDPattern is what a delivery id looks like, for error messages.
const IDPattern = `^dlv_[0-9a-f]{32}$`

var idPattern = regexp.MustCompile(IDPattern)

// ValidID reports whether id has the form of a delivery id.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// ResourceName is the name (metadata.name) of the delivery record whose id
// is id, as the WebhookDelivery resource was named.
func ResourceName(id string) string { return namePrefix + strings.TrimPrefix(id, idPrefix) }

// DueEvents lists, in lifecycle order, the events a call has reached:
// started once it went out, ended once it ended (or failed after being
// accepted), analyzed once its analysis is set. A call the REST API refused
// (its create answered 4xx or 502) reaches none.
func DueEvents(c *switchboardv1.Call) []string {
	var kinds []string
	if c.Status.StartedAt != nil {
		kinds = append(kinds, webhook.EventCallStarted)
	}
	switch c.Status.Phase {
	case switchboardv1.CallEnded:
		kinds = append(kinds, webhook.EventCallEnded)
	case switchboardv1.CallFailed:
		if c.Refusal() == nil {
			kinds = append(kinds, webhook.EventCallEnded)
		}
	}
	if c.Status.Analysis != nil {
		kinds = append(kinds, webhook.EventCallAnalyzed)
	}
	return kinds
}

// Unemitted lists the due events whose deliveries are not yet created.
func Unemitted(c *switchboardv1.Call) []string {
	var out []string
	for _, kind := range DueEvents(c) {
		if !contains(c.Status.EmittedEvents, kind) {
			out = append(out, kind)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Receives reports whether ep gets events of kind: subscribed and enabled.
func Receives(ep *switchboardv1.WebhookEndpoint, kind string) bool {
	return !ep.Spec.Disabled && ep.DeletionTimestamp == nil && ep.Subscribes(kind)
}

// ForCall is the delivery of one call event to one endpoint. Its name and
// id derive from (call, event, endpoint), so creating it twice after a crash
// finds the first one: one delivery, one id, however many attempts.
func ForCall(c *switchboardv1.Call, kind string, ep *switchboardv1.WebhookEndpoint, callID string) *history.Delivery {
	sum := sha256.Sum256([]byte(c.Namespace + "/" + string(c.UID) + "/" + kind + "/" + string(ep.UID)))
	hexPart := hex.EncodeToString(sum[:16])
	d := newDelivery(c.Namespace, hexPart, kind, ep)
	d.Labels[history.DeliveryCallLabel] = c.Name
	d.Spec.CallRef = &history.ObjectName{Name: c.Name}
	d.Spec.CallID = callID
	// Not owned by the Call: a Call leaves the cluster an hour after it
	// ends (--call-retention), while its deliveries are retried for a day
	// and kept in the log for a week; they read the call from the history
	// store then.
	return d
}

// ForTest is the record of a test event sent to ep.
func ForTest(ep *switchboardv1.WebhookEndpoint) *history.Delivery {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	d := newDelivery(ep.Namespace, hex.EncodeToString(b[:]), webhook.EventTest, ep)
	d.Spec.CallID = SampleCallID
	return d
}

func newDelivery(ns, hexPart, kind string, ep *switchboardv1.WebhookEndpoint) *history.Delivery {
	return &history.Delivery{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: namePrefix + hexPart, Labels: map[string]string{
			history.DeliveryEndpointLabel: ep.Name,
			history.DeliveryEventLabel:    kind,
		}},
		Spec: history.DeliverySpec{DeliveryID: idPrefix + hexPart, Event: kind,
			EndpointRef: history.ObjectName{Name: ep.Name}, EndpointID: ep.ResolvedID()},
	}
}

// Body is the exact request body of a call event: the envelope around the
// call object as of now, with a fresh recording link.
func Body(ctx context.Context, kind string, c *switchboardv1.Call, store recording.Store) ([]byte, error) {
	view, err := callview.Render(ctx, c, store)
	if err != nil {
		return nil, err
	}
	return webhook.Envelope(kind, view)
}

// Earlier lists the kinds that come before kind in a call's lifecycle.
func Earlier(kind string) []string {
	for i, k := range webhook.CallKinds {
		if k == kind {
			return webhook.CallKinds[:i]
		}
	}
	return nil
}

// IDFor is the id of the delivery of kind for the same call and endpoint
// (used to find the earlier events of a call).
func IDFor(c *switchboardv1.Call, kind string, ep *switchboardv1.WebhookEndpoint) string {
	return ForCall(c, kind, ep, "").Spec.DeliveryID
}
