package restapi_test

// The hosted voice-AI service's official Node SDK (retell-sdk, pinned in
// hack/sdk-compat) against the running operator: a backend written with it
// changes its baseURL and keeps working.

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// TestSDKCompatNode runs hack/sdk-compat/sdk-compat.js: it places a call
// with the SDK, polls it until analyzed, lists calls, and provokes errors;
// the call it saw is the call GET /v1/calls/{id} shows.
func TestSDKCompatNode(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node is not on PATH (the SDK needs Node.js 18 or later): %v", err)
	}
	dir := filepath.Join(RepoRoot, "hack", "sdk-compat")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "retell-sdk")); err != nil {
		t.Fatalf("hack/sdk-compat/node_modules is missing: run `npm ci --prefix hack/sdk-compat` (make test does it): %v", err)
	}
	o := NewOrg(t)
	// An older call, placed through /v1, for the list's second page.
	older := o.CreateCall(t, "+14155557777", nil)

	cmd := exec.Command(node, filepath.Join(dir, "sdk-compat.js"))
	cmd.Env = append(os.Environ(), "SWITCHBOARD_URL="+Operator.BaseURL, "SWITCHBOARD_API_KEY="+o.Key,
		"SWITCHBOARD_AGENT_ID="+o.AgentID, "SWITCHBOARD_FROM_NUMBER="+AgentFrom, "SWITCHBOARD_TO_NUMBER=+14155551234")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("sdk-compat.js: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr.String())
	}
	var run SdkRun
	if err := json.Unmarshal(stdout, &run); err != nil {
		t.Fatalf("sdk-compat.js printed %q: %v", stdout, err)
	}

	// createPhoneCall answered the new call, registered.
	id, _ := run.Created["call_id"].(string)
	g.Expect(id).To(MatchRegexp(`^call_[0-9a-f]{32}$`))
	g.Expect(run.Created).To(And(HaveKeyWithValue("call_status", "registered"), HaveKeyWithValue("call_type", "phone_call"),
		HaveKeyWithValue("agent_id", o.AgentID), HaveKeyWithValue("direction", "outbound"),
		HaveKeyWithValue("from_number", AgentFrom), HaveKeyWithValue("to_number", "+14155551234"),
		HaveKeyWithValue("metadata", map[string]any{"order": 7.0}),
		HaveKeyWithValue("retell_llm_dynamic_variables", map[string]any{"customer_name": "Ada"})))

	// retrieve saw it go out and end, then analyzed.
	g.Expect(run.Statuses).To(Equal([]string{"registered", "ongoing", "ended"}))
	final := run.Final
	g.Expect(final).To(And(HaveKeyWithValue("call_id", id), HaveKeyWithValue("call_status", "ended"),
		HaveKeyWithValue("disconnection_reason", "agent_hangup"), HaveKey("start_timestamp"), HaveKey("end_timestamp"),
		HaveKey("duration_ms"), HaveKey("recording_url")))
	analysis, _ := final["call_analysis"].(map[string]any)
	g.Expect(analysis).To(And(HaveKeyWithValue("in_voicemail", false), HaveKey("call_summary"),
		HaveKeyWithValue("custom_analysis_data", HaveKeyWithValue("customer_name", "Ada"))))

	// Its transcript in the SDK's shape (PhoneCallResponse.transcript, a
	// string, and transcript_object, utterances of role agent or user with
	// content and words), the same as GET /v1/calls/{call_id}/transcript.
	g.Expect(final["transcript"]).To(And(BeAssignableToTypeOf(""), ContainSubstring("User: Um, Ada.\n")))
	utterances, _ := final["transcript_object"].([]any)
	g.Expect(utterances).NotTo(BeEmpty())
	for _, u := range utterances {
		g.Expect(u).To(And(HaveKeyWithValue("role", BeElementOf("agent", "user")),
			HaveKeyWithValue("content", BeAssignableToTypeOf("")), HaveKeyWithValue("words", BeEmpty())))
	}
	v1Transcript := Do(t, "GET", "/v1/calls/"+id+"/transcript", o.Key, nil)
	g.Expect(final["transcript"]).To(Equal(v1Transcript.Body["transcript"]))
	g.Expect(run.Created).NotTo(HaveKey("transcript"), "a call just placed has no transcript")

	// The same call through /v1: the same times, length, analysis, data.
	v1 := o.GetCall(t, id)
	g.Expect(v1).To(And(HaveKeyWithValue("status", "ended"), HaveKeyWithValue("source", "api")))
	g.Expect(final["start_timestamp"]).To(BeNumerically("==", Millis(t, v1["started_at"])))
	g.Expect(final["end_timestamp"]).To(BeNumerically("==", Millis(t, v1["ended_at"])))
	g.Expect(final["duration_ms"]).To(Equal(v1["duration_ms"]))
	g.Expect(final["metadata"]).To(Equal(v1["metadata"]))
	g.Expect(final["retell_llm_dynamic_variables"]).To(Equal(v1["variables"]))
	g.Expect(analysis["call_summary"]).To(Equal(v1["analysis"].(map[string]any)["summary"]))
	g.Expect(analysis["custom_analysis_data"]).To(Equal(v1["analysis"].(map[string]any)["extracted_data"]))
	// Its recording_url is a working link to the recording.
	rec, err := http.Get(final["recording_url"].(string)) //nolint:noctx // test
	g.Expect(err).NotTo(HaveOccurred())
	_ = rec.Body.Close()
	g.Expect(rec.StatusCode).To(Equal(http.StatusOK))
	g.Expect(rec.Header.Get("Content-Type")).To(HavePrefix("audio/"))

	// list: the agent's calls newest first, a page at a time, /v1's call included.
	g.Expect(run.FirstPage.Ids()).To(Equal([]any{id}))
	g.Expect(run.FirstPage.HasMore).To(BeTrue())
	g.Expect(run.FirstPage.PaginationKey).NotTo(BeNil())
	g.Expect(run.SecondPage.Ids()).To(Equal([]any{older}))
	g.Expect(run.SecondPage.HasMore).To(BeFalse())
	g.Expect(run.SecondPage.PaginationKey).To(BeNil())
	g.Expect(run.Ended.Ids()).To(Equal([]any{id}), "ended calls to +14155551234")
	g.Expect(run.Ended.Items[0]).To(HaveKeyWithValue("call_status", "ended"))

	// Errors arrive as the SDK's error classes, with /v1's bodies.
	errs := run.Errors
	g.Expect(errs["missingVariables"].Class).To(Equal("UnprocessableEntityError"))
	g.Expect(errs["missingVariables"].Error).To(HaveKeyWithValue("detail", And(
		HaveKeyWithValue("error_code", "missing_variables"), HaveKeyWithValue("missing_variables", []any{"customer_name"}))))
	g.Expect(errs["notFound"].Class).To(Equal("NotFoundError"))
	g.Expect(errs["notFound"].Error).To(HaveKeyWithValue("detail", "Call not found."))
	g.Expect(errs["ascending"].Status).To(Equal(http.StatusUnprocessableEntity))
	g.Expect(errs["badKey"].Class).To(Equal("AuthenticationError"))
	g.Expect(errs["stopEnded"].Class).To(Equal("ConflictError"))
	g.Expect(errs["stopEnded"].Error).To(HaveKeyWithValue("detail", HaveKeyWithValue("error_code", "call_not_active")))

	// createBatchCall created a campaign of the two distinct numbers,
	// scheduled at the trigger, with the window asked for.
	g.Expect(run.Batch).To(And(HaveKeyWithValue("total_task_count", 2.0), HaveKeyWithValue("name", "Reminders"),
		HaveKeyWithValue("scheduled_timestamp", BeNumerically("==", run.BatchTrigger)),
		HaveKeyWithValue("from_number", AgentFrom)))
	campaign := Do(t, "GET", "/v1/campaigns/"+run.Batch["batch_call_id"].(string), o.Key, nil)
	g.Expect(campaign.Status).To(Equal(http.StatusOK))
	g.Expect(campaign.Body["calling_window"]).To(And(HaveKeyWithValue("start", "09:00"), HaveKeyWithValue("end", "20:00"),
		HaveKeyWithValue("days", []any{"mon", "tue"})))
	g.Eventually(func() any {
		return Do(t, "GET", "/v1/campaigns/"+run.Batch["batch_call_id"].(string), o.Key, nil).Body["contacts"]
	}, 10*time.Second, 100*time.Millisecond).Should(HaveKeyWithValue("total", 2.0))
	g.Expect(errs["batchWithoutAgent"].Class).To(Equal("UnprocessableEntityError"))

	// stop hung up the call it stopped while it was out.
	g.Expect(run.Stopped).To(And(HaveKeyWithValue("call_status", "ended"), HaveKeyWithValue("disconnection_reason", "manual_stopped")))
	// No call was placed by the failed create.
	g.Expect(CountCalls(t, o.Ns)).To(Equal(3))
}
