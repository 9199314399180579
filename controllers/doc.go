// Package controllers holds Switchboard's reconcilers, one thin reconciler
// per kind (Agent, Call, Campaign, NumberList, SIPTrunk, WebhookEndpoint),
// at the path kubebuilder scaffolds them (the repository's top level is
// fixed). A reconciler here reacts to a resource's changes through
// controller-runtime: SetupWithManager wires its watches and indexes, and
// internal/app registers it on the manager.
//
// Where each runs:
//   - CallReconciler runs on every replica: each reconciles the Calls
//     assigned to its own worker (internal/workers).
//   - The other reconcilers run on the elected leader only.
//   - Two leader-only jobs that are not reconcilers live here too, because
//     they read what the call reconciler writes: WebhookDeliveryWorker
//     (sends the queued webhook deliveries) and RecordingRetention (deletes
//     recordings past --recording-retention).
//
// Other leader-only jobs live with their concern: the worker assigner and
// the sweep of lost workers in internal/workers, the campaign runner in
// internal/campaigns, the idempotency-key sweeper in internal/idempotency.
// hack/README.md ("What runs where") maps them all.
package controllers
