package telephony

import (
	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
)

// BuildRequest assembles the Request for call placed by agent, from
// number from. agent may be nil (deleted mid-call): the call then carries no
// script, but stays on the trunk it went out on (status.trunk).
func BuildRequest(call *switchboardv1.Call, from string, vars map[string]any, agent *switchboardv1.Agent) Request {
	req := Request{CallID: callid.Of(call), Namespace: call.Namespace, CallName: call.Name,
		From: from, To: call.Spec.ToNumber, Variables: vars, Order: call.QueueOrder()}
	if call.Status.AnsweredAt != nil {
		req.AnsweredAt = &call.Status.AnsweredAt.Time
	}
	if call.Status.StoppedAt != nil {
		req.StopAt = &call.Status.StoppedAt.Time
	}
	req.Trunk = call.Status.Trunk
	for name, value := range call.Spec.SIPHeaders {
		if req.SIPHeaders == nil {
			req.SIPHeaders = make(map[string]string, len(call.Spec.SIPHeaders))
		}
		req.SIPHeaders[name] = string(value)
	}
	if agent == nil {
		return req
	}
	req.Agent = agent
	if req.Trunk == "" && call.CurrentPhase() == switchboardv1.CallQueued && agent.Spec.TrunkRef != nil {
		req.Trunk = agent.Spec.TrunkRef.Name
	}
	req.Greeting = agent.Spec.Greeting
	for _, f := range agent.Spec.ExtractedData {
		req.Fields = append(req.Fields, Field{Name: f.Name, Type: string(f.Type), Description: f.Description})
	}
	return req
}
