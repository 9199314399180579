package deliveries

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// ForCampaign is the delivery of a campaign event to one endpoint, its
// body taken when the event happened. Its id derives from (campaign, event,
// occurrence, endpoint), so queuing it again after a crash finds the
// first: occurrence tells apart the events a campaign has more than once
// (each pause).
func ForCampaign(c *switchboardv1.Campaign, kind, occurrence string, ep *switchboardv1.WebhookEndpoint,
	body []byte) *history.Delivery {
	sum := sha256.Sum256([]byte(c.Namespace + "/" + string(c.UID) + "/" + kind + "/" + occurrence + "/" + string(ep.UID)))
	d := newDelivery(c.Namespace, hex.EncodeToString(sum[:16]), kind, ep)
	d.Labels[switchboardv1.CampaignLabel] = c.Name
	d.Spec.Body = body
	return d
}

// EmitCampaign queues a campaign event's deliveries to every endpoint of
// its organization subscribed to kind. The caller wakes the worker (Wake)
// once the campaign's state that the event announces is stored.
func (e *Emitter) EmitCampaign(ctx context.Context, c *switchboardv1.Campaign, kind, occurrence string, body []byte) error {
	endpoints, err := e.endpoints(ctx, c.Namespace)
	if err != nil {
		return err
	}
	now := metav1.NewTime(e.Clock.Now())
	var queue []*history.Delivery
	for i := range endpoints {
		if ep := &endpoints[i]; Receives(ep, kind) {
			d := ForCampaign(c, kind, occurrence, ep, body)
			d.CreationTimestamp = now
			queue = append(queue, d)
		}
	}
	if len(queue) == 0 {
		return nil
	}
	if err := e.Queue.EnqueueDeliveries(ctx, queue); err != nil {
		return fmt.Errorf("queuing %d deliveries: %w", len(queue), err)
	}
	return nil
}
