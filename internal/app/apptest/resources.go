package apptest

// What platform teams and operators on call see of the custom resources
// end to end, beside the REST API: the printed tables of calls placed over
// REST, Calls applied as resources and read over REST, and Agents that
// REST cannot tell apart. The reconcilers' own behaviour is tested in
// controllers/.

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// Polling of the resource tests.
const (
	ResWait = testsupport.ResourceWait
	ResPoll = testsupport.ResourcePoll
)

// SampleAgentID is the agent id pinned by config/samples.
const SampleAgentID = "7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f"

// ResNamespace creates a fresh organization namespace without a key.
func ResNamespace(t *testing.T) string {
	t.Helper()
	return ControlPlane.NewOrganization(t, "res-")
}

// ResWaitRESTStatus waits until GET /v1/calls/{id} reports status, and
// returns the call object. The REST API reads the operator's informer cache,
// which may be a moment behind what the uncached k8s client has just seen.
func ResWaitRESTStatus(t *testing.T, key, id, status string) map[string]any {
	t.Helper()
	var r Response
	NewWithT(t).Eventually(func() any {
		r = Do(t, "GET", "/v1/calls/"+id, key, nil)
		return r.Body["status"]
	}, ResWait, ResPoll).Should(Equal(status), func() string { return string(r.Raw) })
	return r.Body
}
