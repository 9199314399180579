// Package campaigns runs campaigns: many calls declared once, each contact
// called inside its own calling window, paced, and redialed by policy. The
// contacts live in the history store (package history); this package
// decides which of them to dial when, and places their calls through the
// same path as the REST API (package calls), so that a campaign's call is
// admitted, checked and recorded like any other.
//
// Where it runs: Runner, the dialer of every campaign, is a leader-only job
// (NeedLeaderElection), so that a campaign has one dialer at a time; it is
// not a reconciler. The Campaign resource's reconciler (its status and
// events) is controllers.CampaignReconciler. Service (create, list, pause,
// cancel) runs in every replica's REST API and dashboard.
package campaigns
