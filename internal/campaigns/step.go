package campaigns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/quota"
)

// step settles one campaign's attempts in flight, then, unless it is
// paused, places the calls its pacing and share allow.
func (r *Runner) step(ctx context.Context, c *switchboardv1.Campaign, s share) error {
	now := r.Clock.Now()
	policy := PolicyOf(c.Spec.Redial)
	live, err := r.settle(ctx, c, policy, now)
	if err != nil || c.Spec.Paused || c.Spec.Canceled || c.Status.State != switchboardv1.CampaignRunning {
		return err
	}
	window, err := WindowOf(c.Spec.CallingWindow)
	if err != nil {
		return err
	}
	slots := int(c.Spec.Pacing.MaxConcurrent) - live
	if s.active > 0 {
		slots = min(slots, s.active-live)
	}
	p := r.pacer(c, s, now)
	n := p.available(now, slots)
	if n <= 0 {
		return nil
	}
	placed, err := r.dialDue(ctx, c, policy, window, n, now)
	p.took(now, placed)
	return err
}

// pacer is the campaign's bucket at its calls per second, or its share of
// its organization's when that is less.
func (r *Runner) pacer(c *switchboardv1.Campaign, s share, now time.Time) *pacer {
	perSec := float64(max(1, c.Spec.Pacing.CallsPerMinute)) / 60
	if s.perSec > 0 {
		perSec = min(perSec, s.perSec)
	}
	key := client.ObjectKeyFromObject(c)
	if r.pacers == nil {
		r.pacers = map[types.NamespacedName]*pacer{}
	}
	p, ok := r.pacers[key]
	if !ok {
		p = newPacer(perSec, r.tick(), now)
		r.pacers[key] = p
	}
	p.set(perSec, r.tick(), now)
	return p
}

// settle records the outcome of each attempt in flight whose call has
// ended, and places again (under the same call id) any claimed attempt
// whose call does not exist: its claimer stopped before placing it. It
// returns how many calls are still live.
func (r *Runner) settle(ctx context.Context, c *switchboardv1.Campaign, policy Policy, now time.Time) (int, error) {
	dialing, err := r.Contacts.DialingContacts(ctx, c.Namespace, c.Name)
	if err != nil {
		return 0, err
	}
	live := 0
	for _, d := range dialing {
		call, err := r.Calls.Get(ctx, c.Namespace, d.CallID)
		switch {
		case errors.Is(err, calls.ErrNotFound):
			live++
			r.resume(ctx, c, policy, d, now)
		case err != nil:
			return live, err
		case call.CurrentPhase().Final():
			if err := r.finish(ctx, c, policy, d, outcomeOf(call), now); err != nil {
				return live, err
			}
		default:
			live++
		}
	}
	return live, nil
}

// resume places an attempt claimed by a leader that stopped before placing
// it, unless its window has closed since: it then waits for the next.
func (r *Runner) resume(ctx context.Context, c *switchboardv1.Campaign, policy Policy, d history.Contact, now time.Time) {
	if w, err := WindowOf(c.Spec.CallingWindow); err == nil && !c.Spec.Paused && !c.Spec.Canceled {
		if open, ok := w.NextOpen(now, locations(d.Zones)); ok && !open.After(now) {
			r.place(ctx, c, policy, d, now)
			return
		}
	}
	if _, err := r.Contacts.ReleaseAttempt(ctx, c.Namespace, c.Name, d.Seq, d.CallID, now, now); err != nil {
		r.Log.Error(err, "releasing a campaign attempt", "namespace", c.Namespace, "campaign", c.Name)
	}
}

// outcomeOf is an ended call's disposition, or the code of a failed one.
func outcomeOf(call *switchboardv1.Call) string {
	if call.Status.Disposition != "" {
		return string(call.Status.Disposition)
	}
	if f := call.Status.Failure; f != nil {
		return f.ErrorCode
	}
	if f := call.Refusal(); f != nil {
		return f.ErrorCode
	}
	return "failed"
}

func (r *Runner) finish(ctx context.Context, c *switchboardv1.Campaign, policy Policy, d history.Contact,
	outcome string, now time.Time) error {
	zones := locations(d.Zones)
	_, err := r.Contacts.FinishAttempt(ctx, c.Namespace, c.Name, d.Seq, d.CallID, policy.After(d, outcome, now, zones), now)
	return err
}

// dialDue places up to n calls to due contacts whose window is open, and
// moves the others to their window's opening (or skips them, when it never
// opens). It returns how many it placed.
func (r *Runner) dialDue(ctx context.Context, c *switchboardv1.Campaign, policy Policy, w Window, n int,
	now time.Time) (int, error) {
	due, err := r.Contacts.DueContacts(ctx, c.Namespace, c.Name, now, max(2*n, minDueRead))
	if err != nil {
		return 0, err
	}
	placed := 0
	var later []history.Deferral
	for _, d := range due {
		zones := locations(d.Zones)
		open, ok := w.NextOpen(now, zones)
		switch {
		case !ok:
			_, err = r.Contacts.SkipContact(ctx, c.Namespace, c.Name, d.Seq, OutcomeNoWindow, now)
		case open.After(now):
			later = append(later, history.Deferral{Seq: d.Seq, DueAt: open})
		case placed < n:
			var claimed bool
			claimed, err = r.claim(ctx, c, policy, d, zones, now)
			if claimed {
				placed++
			}
		}
		if err != nil {
			return placed, err
		}
	}
	return placed, r.Contacts.DeferContacts(ctx, c.Namespace, c.Name, later, now)
}

// minDueRead is how many due contacts a step reads at least, so that
// contacts outside their window are moved out of the way in bulk.
const minDueRead = 200

// claim claims the contact's next attempt and places its call.
func (r *Runner) claim(ctx context.Context, c *switchboardv1.Campaign, policy Policy, d history.Contact,
	zones []*time.Location, now time.Time) (bool, error) {
	callID := AttemptCallID(c, d.Seq, d.Attempts+1)
	ok, err := r.Contacts.ClaimContact(ctx, c.Namespace, c.Name, d, callID, LocalDay(now, zones), now)
	if !ok || err != nil {
		return false, err
	}
	last := policy.IsLastAttempt(d)
	d.Attempts++
	d.CallID, d.State = callID, history.ContactDialing
	if last {
		d.Outcome = lastAttempt
	}
	r.place(ctx, c, policy, d, now)
	return true, nil
}

// lastAttempt marks, in memory only, a contact about to be dialed for the
// last time.
const lastAttempt = "\x00last"

// AttemptCallID is the call id of a contact's attempt: the same whoever
// computes it, so that placing an attempt twice finds the first call.
func AttemptCallID(c *switchboardv1.Campaign, seq int64, attempt int) string {
	sum := sha256.Sum256([]byte(string(c.UID) + "/" + strconv.FormatInt(seq, 10) + "/" + strconv.Itoa(attempt)))
	return "call_" + hex.EncodeToString(sum[:16])
}

// place places a claimed attempt's call. What the organization's limits
// or a passing failure refused is released to be claimed again; what the
// call policy or the apiserver refused for good is the attempt's outcome.
func (r *Runner) place(ctx context.Context, c *switchboardv1.Campaign, policy Policy, d history.Contact, now time.Time) {
	_, err := r.Placer.Place(ctx, c.Namespace, requestOf(c, d), d.CallID)
	if err == nil {
		if r.Placed != nil {
			r.Placed(c)
		}
		return
	}
	var refused *calls.Refused
	var dispatch *calls.DispatchFailed
	var exceeded *quota.Exceeded
	var unavailable *calls.Unavailable
	switch {
	case errors.As(err, &dispatch):
		err = r.finish(ctx, c, policy, d, dispatch.Code, now)
	case errors.As(err, &refused) && !agentRefusal(refused.Rejection.Code):
		err = r.finish(ctx, c, policy, d, refused.Rejection.Code, now)
	case apierrors.IsInvalid(err):
		// The Call itself is refused (a contact stored before its
		// variables were checked at upload): it would be every time.
		r.Log.Info("a campaign call was refused as invalid; the contact is done", "namespace", c.Namespace,
			"campaign", c.Name, "seq", d.Seq, "error", err.Error())
		err = r.finish(ctx, c, policy, d, OutcomeCallInvalid, now)
	case errors.As(err, &unavailable) && unavailable.Uncertain:
		return // the next step finds the call, or places it
	case errors.As(err, &exceeded):
		_, err = r.Contacts.ReleaseAttempt(ctx, c.Namespace, c.Name, d.Seq, d.CallID, now.Add(exceeded.RetryAfter), now)
	default:
		r.Log.Info("a campaign call could not be placed; it is retried", "namespace", c.Namespace,
			"campaign", c.Name, "error", err.Error())
		_, err = r.Contacts.ReleaseAttempt(ctx, c.Namespace, c.Name, d.Seq, d.CallID, now.Add(retryAfter), now)
	}
	if err != nil {
		r.Log.Error(err, "recording a campaign attempt", "namespace", c.Namespace, "campaign", c.Name)
	}
}

// agentRefusal: the agent, not the contact, is why the call was refused
// (it was made inactive, or cannot call out): every contact would be, so
// none is spent on it; they wait for the agent to be fixed.
func agentRefusal(code string) bool {
	return code == callpolicy.CodeAgentInactive || code == callpolicy.CodeAgentNotOutbound
}

// retryAfter is how long a contact whose call could not be placed for a
// passing reason (the agent missing, the apiserver not answering) waits.
const retryAfter = 30 * time.Second

// requestOf is the call request of a contact's attempt: the contact's
// variables (with the redial policy's on its last attempt), its metadata
// with campaign_id, source campaign.
func requestOf(c *switchboardv1.Campaign, d history.Contact) calls.Request {
	vars := map[string]any{}
	_ = json.Unmarshal(d.Variables, &vars) // stored from a JSON object
	if d.Outcome == lastAttempt && c.Spec.Redial.LastAttemptVariables != nil {
		_ = json.Unmarshal(c.Spec.Redial.LastAttemptVariables.Raw, &vars)
	}
	meta := map[string]any{}
	_ = json.Unmarshal(d.Metadata, &meta)
	meta["campaign_id"] = c.Name
	rawVars, _ := json.Marshal(vars)
	rawMeta, _ := json.Marshal(meta)
	return calls.Request{AgentID: directory.NormalizeAgentID(c.Spec.AgentID), ToNumber: d.ToNumber, Variables: vars, RawVars: rawVars,
		Metadata: rawMeta, Source: switchboardv1.SourceCampaign,
		Labels: map[string]string{switchboardv1.CampaignLabel: c.Name}}
}
