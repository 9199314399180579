package controllers

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// A campaign's series follow its status, and go with it.
func TestCampaignMetrics(t *testing.T) {
	c := &switchboardv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: "flu"},
		Status: switchboardv1.CampaignStatus{State: switchboardv1.CampaignRunning, Pending: 7, Done: 3, Answered: 2}}
	observeCampaign(c)
	if got := testutil.ToFloat64(campaignContacts.WithLabelValues("org", "flu", "pending")); got != 7 {
		t.Errorf("pending = %v", got)
	}
	if got := testutil.ToFloat64(campaignRunning.WithLabelValues("org", "flu")); got != 1 {
		t.Errorf("running = %v", got)
	}
	c.Status.State, c.Status.Pending, c.Status.Done = switchboardv1.CampaignCompleted, 0, 10
	observeCampaign(c)
	if got := testutil.ToFloat64(campaignContacts.WithLabelValues("org", "flu", "done")); got != 10 {
		t.Errorf("done = %v", got)
	}
	if got := testutil.ToFloat64(campaignRunning.WithLabelValues("org", "flu")); got != 0 {
		t.Errorf("a completed campaign runs: %v", got)
	}
	forgetCampaign(c)
	if n := testutil.CollectAndCount(campaignContacts); n != 0 {
		t.Errorf("%d series left after the campaign was deleted", n)
	}
}
