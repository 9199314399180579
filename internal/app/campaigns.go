package app

import (
	"fmt"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/switchboard-dev/switchboard/controllers"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/campaigns"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

// setupCampaigns registers the Campaign reconciler (state and counters)
// and the runner that dials their contacts, both on the leader. The
// runner places calls through placer, the REST API's own.
func setupCampaigns(mgr manager.Manager, placer *calls.Placer, admission *quota.Admission,
	wakeDeliveries func(), opts Options) error {
	webhooks := &deliveries.Emitter{Endpoints: mgr.GetClient(), Limits: admission, Queue: opts.History,
		Queued: wakeDeliveries, Clock: clock.RealClock{}}
	if err := (&controllers.CampaignReconciler{Client: mgr.GetClient(), Contacts: opts.History,
		Events: mgr.GetEventRecorder("switchboard"), Clock: clock.RealClock{}, Webhooks: webhooks,
		StatusInterval: opts.CampaignStatusInterval, Directory: placer.Directory}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("campaign controller: %w", err)
	}
	return mgr.Add(&campaigns.Runner{Cache: mgr.GetClient(), Contacts: opts.History, Calls: placer.Book, Placer: placer,
		Limits: admission, Clock: clock.RealClock{}, Log: opts.Log.WithName("campaigns")})
}
