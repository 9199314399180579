package deliveries

import (
	"encoding/json"
	"time"

	"github.com/switchboard-dev/switchboard/internal/callview"
	"github.com/switchboard-dev/switchboard/internal/webhook"
)

// SampleCallID is the call_id of every test event: one no real call has.
const SampleCallID = "call_test_00000000"

// SampleBody is the body of a test event of kind: a made-up call in the
// state that kind announces, with metadata {"test": true}, so a receiver
// can exercise the same code path it uses for real events.
func SampleBody(kind string, now time.Time) ([]byte, error) {
	return webhook.Envelope(kind, sampleCall(kind, now))
}

func sampleCall(kind string, now time.Time) callview.Call {
	str := func(s string) *string { return &s }
	started := now.Add(-45 * time.Second)
	c := callview.Call{
		CallID:     SampleCallID,
		AgentID:    str("00000000-0000-0000-0000-000000000000"),
		Direction:  "outbound",
		Status:     "in_progress",
		Source:     str("api"),
		ToNumber:   str("+14155550123"),
		FromNumber: str("+14155550100"),
		StartedAt:  str(callview.Timestamp(started)),
		Variables:  json.RawMessage(`{}`),
		Metadata:   json.RawMessage(`{"test":true}`),
	}
	if kind == webhook.EventCallStarted {
		return c
	}
	duration := int64(42000)
	c.Status = "ended"
	c.Disposition = str("answered")
	c.EndedAt = str(callview.Timestamp(started.Add(42 * time.Second)))
	c.DurationMS = &duration
	c.DisconnectionReason = str("user_hangup")
	if kind == webhook.EventCallAnalyzed {
		c.Analysis = &callview.Analysis{Summary: "Test event: the callee answered and the call ended normally.",
			ExtractedData: map[string]json.RawMessage{}}
	}
	return c
}
