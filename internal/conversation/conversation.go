// Package conversation is what makes an agent converse: the turn-taking
// loop that runs on a call's line (the SIP engine's media, or the
// simulated carrier's callee) and asks a response engine what to say. A
// response engine is the organization's language model, behind an
// OpenAI-compatible endpoint (package chat) or a server written for
// Retell's custom-LLM WebSocket protocol (package retell); both are
// Sessions, and one loop drives either.
//
// The vocabulary follows Retell's protocol, the stricter of the two: a
// response has an id, a newer request discards the chunks of older ones,
// and end_call, transfer_number and digit_to_press act only once the
// content before them was spoken without interruption.
package conversation

import (
	"context"
	"encoding/json"
)

// Roles of Message.Role, as Retell's transcript objects name them.
const (
	RoleAgent              = "agent"
	RoleUser               = "user"
	RoleToolCallInvocation = "tool_call_invocation"
	RoleToolCallResult     = "tool_call_result"
)

// Message is one entry of the conversation so far (Retell's
// transcript_with_tool_calls item).
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCallID, Name and Arguments (stringified JSON) are a tool call's
	// invocation; ToolCallID, Content and Successful its result.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
	Arguments  string `json:"arguments,omitempty"`
	Successful *bool  `json:"successful,omitempty"`
}

// Kind is what a Request asks for.
type Kind int

const (
	// Respond: the callee's turn ended; what does the agent say now
	// (Retell's response_required).
	Respond Kind = iota + 1
	// Remind: the callee has been silent; what reminder does the agent say
	// (reminder_required).
	Remind
)

// Request asks the engine for the agent's next response.
type Request struct {
	Kind Kind
	// ResponseID increases with every request of a call; chunks of an
	// older one are discarded.
	ResponseID int
	// Transcript is the whole conversation so far (not a delta).
	Transcript []Message
}

// Chunk is a piece of a response (or of a server's agent_interrupt), in
// the order it streams.
type Chunk struct {
	// ResponseID is the Request's this chunk answers; InterruptID is set
	// instead (>0) for an agent_interrupt the server pushed on its own.
	ResponseID, InterruptID int
	// Content is text to speak, a partial sentence or more.
	Content string
	// Complete is set on the response's last chunk.
	Complete bool
	// NoInterruption: the callee cannot interrupt this response.
	NoInterruption bool
	// EndCall, TransferNumber and Digits act once the response's content
	// was spoken without interruption (end_call, transfer_number,
	// digit_to_press).
	EndCall        bool
	TransferNumber string
	Digits         string
	// TransferSummary is the model's summary of the call for a warm
	// transfer's whisper; TransferToolCallID is the transfer_call
	// invocation that asked, whose tool_call_result the loop writes once
	// the transfer connected or failed, so the model's next request
	// carries why it failed.
	TransferSummary    string
	TransferToolCallID string
	// Tool, when set, is a tool call's invocation or result for the
	// transcript (the engine ran it, or the server reports it).
	Tool *Message
}

// CallDetails is what the engine may know of the call (Retell's
// call_details): the REST API's names.
type CallDetails struct {
	CallID    string          `json:"call_id"`
	AgentID   string          `json:"agent_id"`
	From      string          `json:"from_number"`
	To        string          `json:"to_number"`
	Variables map[string]any  `json:"retell_llm_dynamic_variables,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// Opener opens a call's session once the call is answered. The session
// sends the begin message (or its absence) as response 0: chunks with
// ResponseID 0, the last Complete; empty content waits for the callee to
// speak first.
type Opener func(ctx context.Context, call CallDetails) (Session, error)

// Session is one call's response engine.
type Session interface {
	// Chunks delivers every response chunk (and agent_interrupt), in
	// order, until the session ends; then it is closed.
	Chunks() <-chan Chunk
	// Request asks for a response; its chunks come on Chunks with
	// req.ResponseID. It does not block on the engine.
	Request(req Request)
	// Update tells the engine the transcript changed (update_only; turn is
	// "agent_turn", "user_turn" or ""); engines that do not care ignore it.
	Update(transcript []Message, turn string)
	// Settings are the server's turn-taking changes (update_agent); nil
	// for engines without any.
	Settings() <-chan Settings
	// Err is why the session ended once Chunks is closed (nil: closed by
	// Close); an *Error names the call's disconnection reason.
	Err() error
	// Close ends the session.
	Close() error
}

// Settings are the turn-taking settings a Retell server may change during
// the call (update_agent); nil fields are unchanged.
type Settings struct {
	// ReminderAfterMs and ReminderMaxCount: reminder_trigger_ms and
	// reminder_max_count.
	ReminderAfterMs, ReminderMaxCount *int
	// InterruptionSensitivity 0 makes the agent uninterruptible.
	InterruptionSensitivity *float64
}

// Error is a response engine's failure, as the call's disconnection
// reason says it.
type Error struct {
	// Reason is the disconnection_reason: Retell's
	// error_llm_websocket_open, error_llm_websocket_lost_connection,
	// error_llm_websocket_runtime, error_llm_websocket_corrupt_payload,
	// or error_llm for an OpenAI-compatible endpoint.
	Reason string
	// Detail says what happened, for the call's reason and the logs (never
	// the organization's key or transcript).
	Detail string
}

func (e *Error) Error() string { return e.Reason + ": " + e.Detail }

// Disconnection reasons of a conversation's failures.
const (
	ReasonLLM              = "error_llm"
	ReasonWebSocketOpen    = "error_llm_websocket_open"
	ReasonWebSocketLost    = "error_llm_websocket_lost_connection"
	ReasonWebSocketRuntime = "error_llm_websocket_runtime"
	ReasonWebSocketCorrupt = "error_llm_websocket_corrupt_payload"
)
