// Package callview renders a Call resource as the REST API's call object
// (the OpenAPI document's Call schema), the same shape GET /v1/calls/{call_id} returns and
// every event carries. The transcript is never part of it, and the
// recording link is signed at render time, never stored.
package callview

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/recording"
)

// LinkTTL is how long recording links stay valid: about one hour.
const LinkTTL = time.Hour

// Call is the call object. Nullable fields are pointers so that they render
// as JSON null rather than disappearing.
type Call struct {
	CallID              string          `json:"call_id"`
	AgentID             *string         `json:"agent_id"`
	Direction           string          `json:"direction"`
	Status              string          `json:"status"`
	Disposition         *string         `json:"disposition"`
	Source              *string         `json:"source"`
	ToNumber            *string         `json:"to_number"`
	FromNumber          *string         `json:"from_number"`
	StartedAt           *string         `json:"started_at"`
	EndedAt             *string         `json:"ended_at"`
	DurationMS          *int64          `json:"duration_ms"`
	DisconnectionReason *string         `json:"disconnection_reason"`
	RecordingURL        *string         `json:"recording_url"`
	Variables           json.RawMessage `json:"variables"`
	Metadata            json.RawMessage `json:"metadata"`
	Analysis            *Analysis       `json:"analysis"`
	// Transfer is the agent's last transfer of the callee to a person;
	// null when it made none.
	Transfer *Transfer `json:"transfer"`
}

// Transfer is a call's transfer to a person, as status.transfer holds it.
// Times and the second leg's length are null until they happened.
type Transfer struct {
	To                  string  `json:"to"`
	Mode                string  `json:"mode"`
	Method              string  `json:"method"`
	Result              string  `json:"result"`
	SIPStatus           *int32  `json:"sip_status"`
	Detail              *string `json:"detail"`
	RequestedAt         *string `json:"requested_at"`
	ConnectedAt         *string `json:"connected_at"`
	SecondLegDurationMS *int64  `json:"second_leg_duration_ms"`
}

// Analysis is the post-call analysis.
type Analysis struct {
	Summary       string                     `json:"summary"`
	ExtractedData map[string]json.RawMessage `json:"extracted_data"`
}

var emptyObject = json.RawMessage(`{}`)

// Render builds the call object as of now. A recording link that cannot be
// signed (the file is gone, say) renders as null rather than failing the read.
func Render(ctx context.Context, c *switchboardv1.Call, store recording.Store) (Call, error) {
	out := Call{
		CallID:              callid.Of(c),
		AgentID:             nonEmpty(c.Spec.AgentID),
		Direction:           "outbound",
		Status:              string(c.CurrentPhase()),
		Disposition:         nonEmpty(string(c.Status.Disposition)),
		Source:              nonEmpty(string(c.Spec.Source)),
		ToNumber:            nonEmpty(c.Spec.ToNumber),
		FromNumber:          nonEmpty(firstNonEmpty(c.Status.FromNumber, c.Spec.FromNumber)),
		DurationMS:          c.Status.DurationMS,
		DisconnectionReason: nonEmpty(c.Status.DisconnectionReason),
		Variables:           object(c.VariablesJSON()),
		Metadata:            object(c.MetadataJSON()),
	}
	if c.Status.StartedAt != nil {
		out.StartedAt = timestamp(c.Status.StartedAt.Time)
	}
	if c.Status.EndedAt != nil {
		out.EndedAt = timestamp(c.Status.EndedAt.Time)
	}
	if a := c.Status.Analysis; a != nil {
		out.Analysis = &Analysis{Summary: a.Summary, ExtractedData: extractedData(a.ExtractedData)}
	}
	out.Transfer = transfer(c.Status.Transfer)
	if c.Status.Recording != nil && store != nil {
		link, err := store.Link(ctx, c.Status.Recording.Key, LinkTTL)
		switch {
		case err == nil:
			out.RecordingURL = &link.URL
		case !errors.Is(err, recording.ErrNotFound):
			return Call{}, err
		}
	}
	return out, nil
}

func transfer(t *switchboardv1.CallTransfer) *Transfer {
	if t == nil {
		return nil
	}
	out := &Transfer{To: t.To, Mode: string(t.Mode), Method: string(t.Method), Result: string(t.Result),
		Detail: nonEmpty(t.Detail), SecondLegDurationMS: t.SecondLegMS}
	if t.SIPStatus != 0 {
		status := t.SIPStatus
		out.SIPStatus = &status
	}
	if t.RequestedAt != nil {
		out.RequestedAt = timestamp(t.RequestedAt.Time)
	}
	if t.ConnectedAt != nil {
		out.ConnectedAt = timestamp(t.ConnectedAt.Time)
	}
	return out
}

// Timestamp formats t the way every timestamp of the API is written.
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func timestamp(t time.Time) *string {
	s := Timestamp(t)
	return &s
}

func object(raw []byte) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return emptyObject
	}
	return json.RawMessage(raw)
}

// extractedData renders the stored list as one object; a missing value is null.
func extractedData(values []switchboardv1.ExtractedValue) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(values))
	for _, v := range values {
		out[v.Name] = json.RawMessage("null")
		if v.Value != nil && len(v.Value.Raw) > 0 {
			out[v.Name] = json.RawMessage(v.Value.Raw)
		}
	}
	return out
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
