package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Campaign metrics, per campaign: an organization runs a few campaigns at
// a time, and a deleted campaign's series are removed, so the labels stay
// bounded. They are set when the counters are written (every few seconds).
var (
	campaignContacts = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchboard_campaign_contacts",
		Help: "A campaign's contacts by state (pending, waiting, dialing, done, answered, skipped).",
	}, []string{"namespace", "campaign", "state"})
	campaignRunning = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchboard_campaign_running",
		Help: "1 while a campaign runs (placing calls), 0 while scheduled, paused or ended.",
	}, []string{"namespace", "campaign"})
)

func init() { metrics.Registry.MustRegister(campaignContacts, campaignRunning) }

// observeCampaign sets c's series from its status.
func observeCampaign(c *switchboardv1.Campaign) {
	s := c.Status
	for state, n := range map[string]int64{"pending": s.Pending, "waiting": s.Waiting, "dialing": s.Dialing,
		"done": s.Done, "answered": s.Answered, "skipped": s.Skipped} {
		campaignContacts.WithLabelValues(c.Namespace, c.Name, state).Set(float64(n))
	}
	running := 0.0
	if s.State == switchboardv1.CampaignRunning {
		running = 1
	}
	campaignRunning.WithLabelValues(c.Namespace, c.Name).Set(running)
}

// forgetCampaign removes a deleted campaign's series.
func forgetCampaign(c *switchboardv1.Campaign) {
	campaignContacts.DeletePartialMatch(prometheus.Labels{"namespace": c.Namespace, "campaign": c.Name})
	campaignRunning.DeleteLabelValues(c.Namespace, c.Name)
}
