package telephony

import (
	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// BuildRequest assembles the Request for a call placed by agent. agent may be
// nil (deleted mid-call): the call then carries no script.
func BuildRequest(callID, from, to string, vars map[string]any, agent *switchboardv1.Agent) Request {
	req := Request{CallID: callID, From: from, To: to, Variables: vars}
	if agent == nil {
		return req
	}
	req.Greeting = agent.Spec.Greeting
	for _, f := range agent.Spec.ExtractedData {
		req.Fields = append(req.Fields, Field{Name: f.Name, Type: string(f.Type), Description: f.Description})
	}
	return req
}
