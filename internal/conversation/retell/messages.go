package retell

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboard-dev/switchboard/internal/conversation"
)

// interaction_type of the messages sent to the server.
const (
	interactionPingPong    = "ping_pong"
	interactionCallDetails = "call_details"
	interactionUpdateOnly  = "update_only"
	interactionResponse    = "response_required"
	interactionReminder    = "reminder_required"
)

// response_type of the messages the server sends.
const (
	responseConfig             = "config"
	responsePingPong           = "ping_pong"
	responseResponse           = "response"
	responseAgentInterrupt     = "agent_interrupt"
	responseUpdateAgent        = "update_agent"
	responseToolCallInvocation = "tool_call_invocation"
	responseToolCallResult     = "tool_call_result"
	responseMetadata           = "metadata"
)

type pingPong struct {
	InteractionType string `json:"interaction_type"`
	Timestamp       int64  `json:"timestamp"`
}

type callDetails struct {
	InteractionType string `json:"interaction_type"`
	Call            call   `json:"call"`
}

// call is the Register Call response's shape, as Retell's sample
// call_details carries it.
type call struct {
	CallType                   string          `json:"call_type"`
	CallID                     string          `json:"call_id"`
	AgentID                    string          `json:"agent_id"`
	FromNumber                 string          `json:"from_number"`
	ToNumber                   string          `json:"to_number"`
	Direction                  string          `json:"direction"`
	CallStatus                 string          `json:"call_status"`
	Metadata                   json.RawMessage `json:"metadata"`
	Variables                  map[string]any  `json:"retell_llm_dynamic_variables"`
	OptOutSensitiveDataStorage bool            `json:"opt_out_sensitive_data_storage"`
}

func newCallDetails(d conversation.CallDetails) callDetails {
	c := call{
		CallType: "phone_call", CallID: d.CallID, AgentID: d.AgentID,
		FromNumber: d.From, ToNumber: d.To, Direction: "outbound", CallStatus: "registered",
		Metadata: d.Metadata, Variables: d.Variables,
	}
	// Servers index into these objects; an empty object is safer than null.
	if len(c.Metadata) == 0 {
		c.Metadata = json.RawMessage("{}")
	}
	if c.Variables == nil {
		c.Variables = map[string]any{}
	}
	return callDetails{InteractionType: interactionCallDetails, Call: c}
}

// utterance is a transcript object; Switchboard has no word timings yet,
// so words is empty (but present: typed servers expect the array).
type utterance struct {
	Role    string     `json:"role"`
	Content string     `json:"content"`
	Words   []struct{} `json:"words"`
}

type transcriptMessage struct {
	InteractionType         string                 `json:"interaction_type"`
	ResponseID              *int                   `json:"response_id,omitempty"`
	Transcript              []utterance            `json:"transcript"`
	TranscriptWithToolCalls []conversation.Message `json:"transcript_with_tool_calls,omitempty"`
	TurnTaking              string                 `json:"turntaking,omitempty"`
}

// transcript is the agent's and the callee's utterances of msgs (tool
// calls are only in transcript_with_tool_calls).
func transcript(msgs []conversation.Message) []utterance {
	out := make([]utterance, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == conversation.RoleAgent || m.Role == conversation.RoleUser {
			out = append(out, utterance{Role: m.Role, Content: m.Content, Words: []struct{}{}})
		}
	}
	return out
}

// serverConfig is the config event's object.
type serverConfig struct {
	AutoReconnect           bool `json:"auto_reconnect"`
	CallDetails             bool `json:"call_details"`
	TranscriptWithToolCalls bool `json:"transcript_with_tool_calls"`
}

type agentConfig struct {
	ReminderTriggerMs       *int     `json:"reminder_trigger_ms"`
	ReminderMaxCount        *int     `json:"reminder_max_count"`
	InterruptionSensitivity *float64 `json:"interruption_sensitivity"`
}

// serverMessage is any message of the server; unknown keys are ignored.
type serverMessage struct {
	ResponseType    string        `json:"response_type"`
	Config          *serverConfig `json:"config"`
	ResponseID      *int          `json:"response_id"`
	InterruptID     *int          `json:"interrupt_id"`
	Content         string        `json:"content"`
	ContentComplete bool          `json:"content_complete"`
	NoInterruption  bool          `json:"no_interruption_allowed"`
	EndCall         bool          `json:"end_call"`
	TransferNumber  string        `json:"transfer_number"`
	DigitToPress    string        `json:"digit_to_press"`
	AgentConfig     *agentConfig  `json:"agent_config"`
	ToolCallID      string        `json:"tool_call_id"`
	Name            string        `json:"name"`
	Arguments       string        `json:"arguments"`
	Successful      *bool         `json:"successful"`
}

// parse decodes one text frame, checking what the protocol requires of
// its type.
func parse(data []byte) (*serverMessage, error) {
	var m serverMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("the message is not valid JSON of the protocol: %w", err)
	}
	if m.ResponseType == "" {
		return nil, errors.New("a message without a response_type")
	}
	return &m, m.check()
}

// check says what the message lacks that its type requires.
func (m *serverMessage) check() error {
	switch m.ResponseType {
	case responseConfig:
		if m.Config == nil {
			return errors.New("a config event without its config object")
		}
	case responseResponse:
		if !atLeast(m.ResponseID, 0) {
			return errors.New("a response without a response_id")
		}
	case responseAgentInterrupt:
		// Chunk.InterruptID > 0 is what tells an interrupt from a response.
		if !atLeast(m.InterruptID, 1) {
			return errors.New("an agent_interrupt without a positive interrupt_id")
		}
	case responseUpdateAgent:
		if m.AgentConfig == nil {
			return errors.New("an update_agent without its agent_config")
		}
	case responseToolCallInvocation, responseToolCallResult:
		if m.ToolCallID == "" {
			return fmt.Errorf("a %s without a tool_call_id", m.ResponseType)
		}
	case responsePingPong, responseMetadata:
	default:
		return fmt.Errorf("unknown response_type %q", m.ResponseType)
	}
	return nil
}

func atLeast(v *int, least int) bool { return v != nil && *v >= least }

// chunk is a response's or an interrupt's chunk.
func (m *serverMessage) chunk() conversation.Chunk {
	c := conversation.Chunk{
		Content: m.Content, Complete: m.ContentComplete, NoInterruption: m.NoInterruption,
		EndCall: m.EndCall, TransferNumber: m.TransferNumber, Digits: m.DigitToPress,
	}
	if m.ResponseType == responseAgentInterrupt {
		c.InterruptID = *m.InterruptID
	} else {
		c.ResponseID = *m.ResponseID
	}
	return c
}

// tool is a tool call event as a transcript entry.
func (m *serverMessage) tool() *conversation.Message {
	if m.ResponseType == responseToolCallInvocation {
		return &conversation.Message{Role: conversation.RoleToolCallInvocation,
			ToolCallID: m.ToolCallID, Name: m.Name, Arguments: m.Arguments}
	}
	return &conversation.Message{Role: conversation.RoleToolCallResult,
		ToolCallID: m.ToolCallID, Content: m.Content, Successful: m.Successful}
}

// settings are update_agent's changes, out-of-range values left out.
func (c *agentConfig) settings() conversation.Settings {
	var s conversation.Settings
	if c.ReminderTriggerMs != nil && *c.ReminderTriggerMs > 0 {
		s.ReminderAfterMs = c.ReminderTriggerMs
	}
	if c.ReminderMaxCount != nil && *c.ReminderMaxCount >= 0 {
		s.ReminderMaxCount = c.ReminderMaxCount
	}
	if v := c.InterruptionSensitivity; v != nil && *v >= 0 && *v <= 1 {
		s.InterruptionSensitivity = v
	}
	return s
}
