package chat

import (
	"github.com/openai/openai-go/v3"

	"github.com/switchboard-dev/switchboard/internal/conversation"
)

// interrupted is the result the model is told of a tool call whose result
// the transcript lacks (the response was superseded while it ran).
const interrupted = "(no result: the call was interrupted before the tool answered)"

// messages is a request's conversation for the model: the system prompt,
// then the transcript (already its last MaxMessages messages), the agent's
// lines as assistant messages, the callee's as user messages, and each run
// of tool call invocations as one assistant message with tool_calls,
// followed at once by their results paired by id, as the API demands. A
// result whose invocation is not in the transcript is left out; a
// reminder request ends with RemindPrompt.
func (s *session) messages(req conversation.Request) []openai.ChatCompletionMessageParamUnion {
	t := req.Transcript
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(t)+2)
	if s.cfg.SystemPrompt != "" {
		out = append(out, openai.SystemMessage(s.cfg.SystemPrompt))
	}
	results := map[string]conversation.Message{}
	for _, m := range t {
		if m.Role == conversation.RoleToolCallResult {
			results[m.ToolCallID] = m
		}
	}
	for i := 0; i < len(t); i++ {
		switch m := t[i]; m.Role {
		case conversation.RoleAgent:
			if m.Content != "" {
				out = append(out, openai.AssistantMessage(m.Content))
			}
		case conversation.RoleUser:
			if m.Content != "" {
				out = append(out, openai.UserMessage(m.Content))
			}
		case conversation.RoleToolCallInvocation:
			j := i
			for j < len(t) && t[j].Role == conversation.RoleToolCallInvocation {
				j++
			}
			out = append(out, toolRound("", withResults(t[i:j], results))...)
			i = j - 1
		}
	}
	if req.Kind == conversation.Remind {
		out = append(out, openai.UserMessage(RemindPrompt))
	}
	return out
}

// withResults pairs invocations with their results; one without is
// told interrupted.
func withResults(invocations []conversation.Message, results map[string]conversation.Message) []invokedCall {
	calls := make([]invokedCall, 0, len(invocations))
	for _, inv := range invocations {
		content := interrupted
		if res, ok := results[inv.ToolCallID]; ok && inv.ToolCallID != "" {
			content = res.Content
		}
		calls = append(calls, invokedCall{id: inv.ToolCallID, name: inv.Name, arguments: inv.Arguments, result: content})
	}
	return calls
}

// invokedCall is a tool call with its result, as the model is told it.
type invokedCall struct {
	id, name, arguments, result string
}

// toolRound is an assistant message (its content, and its calls) and the
// calls' results.
func toolRound(content string, calls []invokedCall) []openai.ChatCompletionMessageParamUnion {
	assistant := openai.ChatCompletionAssistantMessageParam{}
	if content != "" {
		assistant.Content.OfString = openai.String(content)
	}
	for i, c := range calls {
		if c.id == "" {
			calls[i].id = newID()
		}
		args := c.arguments
		if args == "" {
			args = "{}"
		}
		assistant.ToolCalls = append(assistant.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: calls[i].id,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.name, Arguments: args}},
		})
	}
	out := []openai.ChatCompletionMessageParamUnion{{OfAssistant: &assistant}}
	for _, c := range calls {
		out = append(out, openai.ToolMessage(c.result, c.id))
	}
	return out
}
