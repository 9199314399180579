package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/campaigns"
	"github.com/switchboard-dev/switchboard/internal/campaignview"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/webhook"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

// CampaignContactsFinalizer keeps a Campaign until its contacts are
// deleted from the history store.
const CampaignContactsFinalizer = "switchboard.dev/campaign-contacts"

// DefaultCampaignStatusInterval is how often a running campaign's counters
// are written: a status write every few seconds per campaign, whatever
// its calls per second.
const DefaultCampaignStatusInterval = 5 * time.Second

// CampaignReconciler keeps each Campaign's state and counters; the dialing
// itself is campaigns.Runner's. It imports contacts declared in the
// resource, cancels, and deletes the contacts of a deleted campaign.
type CampaignReconciler struct {
	client.Client
	Contacts history.Contacts
	Events   events.EventRecorder
	Clock    clock.PassiveClock
	// StatusInterval: DefaultCampaignStatusInterval when zero.
	StatusInterval time.Duration
	// Webhooks queues the campaign.* events; nil sends none.
	Webhooks *deliveries.Emitter
	// Directory finds the campaign's agent; nil checks none.
	Directory *directory.Directory
}

// +kubebuilder:rbac:groups=switchboard.dev,resources=campaigns,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=switchboard.dev,resources=campaigns/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=switchboard.dev,resources=campaigns/finalizers,verbs=update

// Reconcile brings the campaign's state and counters up to date, and comes
// back while it runs.
func (r *CampaignReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var c switchboardv1.Campaign
	if err := r.Get(ctx, req.NamespacedName, &c); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, r.reconcileDelete(ctx, &c)
	}
	if !controllerutil.ContainsFinalizer(&c, CampaignContactsFinalizer) {
		controllerutil.AddFinalizer(&c, CampaignContactsFinalizer)
		if err := r.Update(ctx, &c); err != nil {
			return reconcile.Result{}, err
		}
	}
	status := newWholeStatusPatcher(r.Client, &c)
	from := c.Status.State
	wasReady := apimeta.FindStatusCondition(c.Status.Conditions, switchboardv1.ReadyCondition).DeepCopy()
	if err := r.reconcileContacts(ctx, &c); err != nil {
		return reconcile.Result{}, err
	}
	next, err := r.reconcileState(ctx, &c)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.reconcileAgent(ctx, &c, wasReady); err != nil {
		return reconcile.Result{}, err
	}
	c.Status.ObservedGeneration = c.Generation
	event := eventOf(from, c.Status.State)
	if err := r.publish(ctx, &c, from, event, status); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: conflictRetry}, nil // counted again on the newer copy
		}
		return reconcile.Result{}, err
	}
	observeCampaign(&c)
	if c.Status.State != from {
		r.changed(&c, from)
	}
	if event != "" && r.Webhooks != nil {
		r.Webhooks.Wake()
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// conflictRetry is how soon a campaign whose completion conflicted with an
// addition of contacts is counted again.
const conflictRetry = 100 * time.Millisecond

// publish queues event's deliveries and writes the status. A completion
// is checked first (a dry run of its write): a conflict then is contacts
// added since this copy was read, and campaign.completed is not queued.
func (r *CampaignReconciler) publish(ctx context.Context, c *switchboardv1.Campaign, from switchboardv1.CampaignState,
	event string, status *statusPatcher) error {
	if completing(from, c) {
		if err := r.Status().Update(ctx, c.DeepCopy(), client.DryRunAll); err != nil {
			return err
		}
	}
	if err := r.emit(ctx, c, event); err != nil {
		return err
	}
	return r.writeStatus(ctx, c, from, status)
}

// writeStatus writes the campaign's status. Completing it is written
// under optimistic concurrency: contacts added over the API since this
// copy was read (campaigns.ContactsAddedAnnotation) make it conflict, and
// the campaign is counted again instead of completed without them.
func (r *CampaignReconciler) writeStatus(ctx context.Context, c *switchboardv1.Campaign,
	from switchboardv1.CampaignState, status *statusPatcher) error {
	if completing(from, c) {
		return r.Status().Update(ctx, c)
	}
	_, err := status.patch(ctx, c)
	return err
}

// completing: this reconcile completes the campaign.
func completing(from switchboardv1.CampaignState, c *switchboardv1.Campaign) bool {
	return c.Status.State == switchboardv1.CampaignCompleted && from != switchboardv1.CampaignCompleted
}

// reconcileContacts copies the contacts declared in the resource to the
// store, once.
func (r *CampaignReconciler) reconcileContacts(ctx context.Context, c *switchboardv1.Campaign) error {
	if c.Status.ContactsImported || len(c.Spec.Contacts) == 0 {
		return nil
	}
	in := make([]campaigns.ContactInput, len(c.Spec.Contacts))
	for i, sc := range c.Spec.Contacts {
		in[i] = campaigns.ContactInput{ToNumber: sc.ToNumber, Timezone: sc.Timezone}
		if sc.Variables != nil {
			in[i].Variables = json.RawMessage(sc.Variables.Raw)
		}
	}
	now := r.Clock.Now()
	prepared, invalid := campaigns.Prepare(in, "", 0, now)
	if len(invalid) > 0 {
		v := invalid[0]
		r.setReady(c, metav1.ConditionFalse, ReasonInvalidContacts,
			fmt.Sprintf("spec.contacts[%d].%s: %s (%d contacts refused)", v.Index, v.Path(), v.Msg, len(invalid)))
		return reconcile.TerminalError(fmt.Errorf("campaign %s/%s has invalid contacts", c.Namespace, c.Name))
	}
	if _, err := r.Contacts.AddContacts(ctx, c.Namespace, c.Name, prepared.Contacts, now); err != nil {
		return err
	}
	c.Status.ContactsImported = true
	return nil
}

// ReasonInvalidContacts: spec.contacts holds a contact that cannot be
// called (a bad number, an unknown time zone).
const ReasonInvalidContacts = "InvalidContacts"

// reconcileState counts the contacts and moves the campaign along:
// scheduled until its start, running, paused, and finally completed or
// canceled. It returns when to look again.
func (r *CampaignReconciler) reconcileState(ctx context.Context, c *switchboardv1.Campaign) (time.Duration, error) {
	now := r.Clock.Now()
	if c.Spec.Canceled && c.Status.State != switchboardv1.CampaignCanceled {
		if _, err := r.Contacts.CancelContacts(ctx, c.Namespace, c.Name, now); err != nil {
			return 0, err
		}
	}
	counted := time.Now()
	counts, err := r.Contacts.CountContacts(ctx, c.Namespace, c.Name, now)
	if err != nil {
		return 0, err
	}
	took := time.Since(counted)
	setCounters(&c.Status, counts)
	c.Status.State = stateOf(c, now)
	switch c.Status.State {
	case switchboardv1.CampaignRunning:
		if c.Status.StartedAt == nil {
			c.Status.StartedAt = &metav1.Time{Time: now}
		}
	case switchboardv1.CampaignCompleted, switchboardv1.CampaignCanceled:
		if c.Status.CompletedAt == nil {
			c.Status.CompletedAt = &metav1.Time{Time: now}
		}
	}
	r.setReady(c, metav1.ConditionTrue, string(c.Status.State), stateMessage(c))
	return r.requeue(c, now, took), nil
}

// stateOf is the campaign's state from its spec and counters.
func stateOf(c *switchboardv1.Campaign, now time.Time) switchboardv1.CampaignState {
	s := c.Status
	finished := s.Pending == 0 && s.Dialing == 0
	switch {
	case s.State == switchboardv1.CampaignCompleted || s.State == switchboardv1.CampaignCanceled:
		return s.State
	case c.Spec.Canceled:
		return switchboardv1.CampaignCanceled
	case finished && (len(c.Spec.Contacts) == 0 || s.ContactsImported):
		return switchboardv1.CampaignCompleted
	case c.Spec.Paused:
		return switchboardv1.CampaignPaused
	case c.Spec.CallingWindow.StartAt != nil && now.Before(c.Spec.CallingWindow.StartAt.Time):
		return switchboardv1.CampaignScheduled
	}
	return switchboardv1.CampaignRunning
}

// requeue is when to count again: every StatusInterval while calls may be
// in flight (or, for a campaign so large that counting it took a while,
// after 20 times as long: counting takes at most a twentieth of the
// store's time), at the start time of a scheduled campaign, never once
// ended.
func (r *CampaignReconciler) requeue(c *switchboardv1.Campaign, now time.Time, counting time.Duration) time.Duration {
	interval := r.StatusInterval
	if interval <= 0 {
		interval = DefaultCampaignStatusInterval
	}
	interval = max(interval, 20*counting)
	switch c.Status.State {
	case switchboardv1.CampaignScheduled:
		return min(c.Spec.CallingWindow.StartAt.Sub(now), time.Hour)
	case switchboardv1.CampaignCompleted:
		return 0
	case switchboardv1.CampaignCanceled:
		if c.Status.Dialing == 0 {
			return 0
		}
	}
	return interval
}

func setCounters(s *switchboardv1.CampaignStatus, counts history.ContactCounts) {
	s.Total = counts.Total()
	s.Pending = counts.ByState[history.ContactPending]
	s.Dialing = counts.ByState[history.ContactDialing]
	s.Done = counts.ByState[history.ContactDone] + counts.ByState[history.ContactSkipped] +
		counts.ByState[history.ContactCanceled]
	s.Skipped = counts.ByState[history.ContactSkipped]
	s.Answered = counts.ByOutcome[string(switchboardv1.DispositionAnswered)]
	s.Waiting = counts.Waiting
	s.NextDueAt = nil
	if !counts.NextDue.IsZero() {
		s.NextDueAt = &metav1.Time{Time: counts.NextDue}
	}
	s.WaitingGroups = nil
	for _, g := range counts.WaitingGroups {
		s.WaitingGroups = append(s.WaitingGroups, switchboardv1.CampaignWaitingGroup{Zones: g.Zones, Count: g.Count,
			NextDueAt: metav1.Time{Time: g.NextDue}})
	}
	s.Outcomes = nil
	if len(counts.ByOutcome) > 0 {
		s.Outcomes = counts.ByOutcome
	}
}

func stateMessage(c *switchboardv1.Campaign) string {
	s := c.Status
	msg := fmt.Sprintf("%d of %d contacts done, %d answered, %d dialing", s.Done, s.Total, s.Answered, s.Dialing)
	if s.Waiting > 0 && s.NextDueAt != nil {
		msg += fmt.Sprintf(", %d waiting for their calling window or redial until %s", s.Waiting,
			s.NextDueAt.UTC().Format(time.RFC3339))
	}
	return msg + "."
}

func (r *CampaignReconciler) setReady(c *switchboardv1.Campaign, status metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: switchboardv1.ReadyCondition,
		Status: status, Reason: reasonOf(reason), Message: msg, ObservedGeneration: c.Generation})
}

// reasonOf turns a state (running) into a condition reason (Running).
func reasonOf(s string) string {
	if s == "" {
		return "Unknown"
	}
	if s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}

func (r *CampaignReconciler) changed(c *switchboardv1.Campaign, from switchboardv1.CampaignState) {
	if r.Events != nil {
		r.Events.Eventf(c, nil, "Normal", reasonOf(string(c.Status.State)), "Campaign",
			"Campaign %s (was %s): %s", c.Status.State, orNone(string(from)), stateMessage(c))
	}
}

// eventOf is the webhook event of a change of state, "" for none: started
// the first time it runs, paused at each pause, completed when it ends.
func eventOf(from, to switchboardv1.CampaignState) string {
	switch {
	case from == to:
		return ""
	case to == switchboardv1.CampaignRunning && (from == "" || from == switchboardv1.CampaignScheduled):
		return webhook.EventCampaignStarted
	case to == switchboardv1.CampaignPaused:
		return webhook.EventCampaignPaused
	case to == switchboardv1.CampaignCompleted || to == switchboardv1.CampaignCanceled:
		return webhook.EventCampaignCompleted
	}
	return ""
}

// emit queues event's deliveries before the state it announces is stored:
// should the store fail, the next reconcile queues them again, under the
// same ids (a pause is told apart by the generation that asked for it).
func (r *CampaignReconciler) emit(ctx context.Context, c *switchboardv1.Campaign, event string) error {
	if event == "" || r.Webhooks == nil {
		return nil
	}
	body, err := webhook.CampaignEnvelope(event, campaignview.Render(c))
	if err != nil {
		return err
	}
	occurrence := "1"
	if event == webhook.EventCampaignPaused {
		occurrence = fmt.Sprint(c.Generation)
	}
	return r.Webhooks.EmitCampaign(ctx, c, event, occurrence, body)
}

func orNone(s string) string {
	if s == "" {
		return "new"
	}
	return s
}

// reconcileDelete deletes the campaign's contacts, then lets it go. Its
// calls are ordinary calls and stay.
func (r *CampaignReconciler) reconcileDelete(ctx context.Context, c *switchboardv1.Campaign) error {
	if !controllerutil.ContainsFinalizer(c, CampaignContactsFinalizer) {
		return nil
	}
	if _, err := r.Contacts.DeleteContacts(ctx, c.Namespace, c.Name); err != nil {
		return err
	}
	forgetCampaign(c)
	controllerutil.RemoveFinalizer(c, CampaignContactsFinalizer)
	return r.Update(ctx, c)
}

// SetupWithManager registers the reconciler. Status writes do not bring it
// back (GenerationChangedPredicate); time does (RequeueAfter).
func (r *CampaignReconciler) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		For(&switchboardv1.Campaign{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{},
			predicate.AnnotationChangedPredicate{}))).
		Named("campaign").
		Complete(r)
}
