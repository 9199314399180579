package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/directory"
)

// Reasons of a Campaign's Ready=False for its agent. The campaign keeps
// its state and its contacts wait (none is spent on an agent that cannot
// call); it turns Ready again once the agent is there and usable.
const (
	// ReasonAgentNotFound: no Agent of the namespace has spec.agentID (or
	// several have).
	ReasonAgentNotFound = "AgentNotFound"
	// ReasonAgentNotOutbound: the Agent cannot place outbound calls.
	ReasonAgentNotOutbound = "AgentNotOutbound"
	// ReasonAgentInactive: the Agent's spec.active is false.
	ReasonAgentInactive = "AgentInactive"
	// ReasonAgentNotReady: the Agent is not Ready (a missing trunk, ...).
	ReasonAgentNotReady = "AgentNotReady"
)

// reconcileAgent checks the campaign's agent while its contacts may still
// be dialed. One the organization does not have, or cannot use, makes the
// campaign Ready=False with the reason, and a Warning Event when that
// changes (was is the Ready condition before this reconcile): otherwise
// it would read running and Ready for ever, the reason in no one's view.
func (r *CampaignReconciler) reconcileAgent(ctx context.Context, c *switchboardv1.Campaign, was *metav1.Condition) error {
	if r.Directory == nil || c.Status.State == switchboardv1.CampaignCompleted ||
		c.Status.State == switchboardv1.CampaignCanceled {
		return nil
	}
	reason, msg, err := r.agentProblem(ctx, c, was)
	if err != nil || reason == "" {
		return err
	}
	r.setReady(c, metav1.ConditionFalse, reason, msg)
	if r.Events != nil && (was == nil || was.Status != metav1.ConditionFalse || was.Reason != reason) {
		r.Events.Eventf(c, nil, "Warning", reason, "Campaign", "%s", msg)
	}
	return nil
}

// agentProblem is why the campaign's agent cannot place its calls, or ""
// when it can. A miss is confirmed with a live list unless the campaign
// was already found without its agent: an Agent applied together with its
// Campaign is not reported missing, and a missing one costs one live list.
func (r *CampaignReconciler) agentProblem(ctx context.Context, c *switchboardv1.Campaign,
	was *metav1.Condition) (reason, msg string, err error) {
	id := directory.NormalizeAgentID(c.Spec.AgentID)
	lookup := r.Directory.AgentConfirmed
	if was != nil && was.Reason == ReasonAgentNotFound {
		lookup = r.Directory.CachedAgent
	}
	agent, err := lookup(ctx, c.Namespace, id)
	const wait = " Its contacts wait until it can."
	switch {
	case errors.Is(err, directory.ErrNotFound):
		return ReasonAgentNotFound, fmt.Sprintf("No agent %s in this organization.%s", c.Spec.AgentID, wait), nil
	case errors.Is(err, directory.ErrAmbiguous):
		return ReasonAgentNotFound, fmt.Sprintf("Several agents in this organization resolve to %s; "+
			"give each a distinct spec.id.%s", c.Spec.AgentID, wait), nil
	case err != nil:
		return "", "", err
	case !agent.Spec.IsOutbound():
		return ReasonAgentNotOutbound, fmt.Sprintf("Agent %s (%s) cannot place outbound calls.%s",
			agent.Name, c.Spec.AgentID, wait), nil
	case !agent.Spec.IsActive():
		return ReasonAgentInactive, fmt.Sprintf("Agent %s (%s) is not active.%s", agent.Name, c.Spec.AgentID, wait), nil
	}
	ready := apimeta.FindStatusCondition(agent.Status.Conditions, switchboardv1.ReadyCondition)
	if ready != nil && ready.Status == metav1.ConditionFalse {
		return ReasonAgentNotReady, fmt.Sprintf("Agent %s (%s) is not ready: %s.%s", agent.Name, c.Spec.AgentID,
			strings.TrimSuffix(ready.Message, "."), wait), nil
	}
	return "", "", nil
}
