package chat

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/pb33f/jsonschema/v6"

	"github.com/switchboard-dev/switchboard/internal/conversation"
)

// toolbox is the tools the model is given: their definitions for the
// request, and their compiled parameters' schemas, by name.
type toolbox struct {
	defs      []openai.ChatCompletionToolUnionParam
	schemas   map[string]*jsonschema.Schema
	functions map[string]Function
}

// builtInTools are the built-in tools' descriptions and parameters.
var builtInTools = map[string]struct{ description, parameters string }{
	toolEndCall: {
		"End the call: say a last line, then hang up. Use it once the conversation is over or the callee asks to stop.",
		`{"type":"object","properties":{"message":{"type":"string","description":"The last line to say before hanging up."}}}`,
	},
	toolPressDigit: {
		"Press one key of the phone's keypad, to get through a phone menu.",
		`{"type":"object","required":["digit"],"properties":{"digit":{"type":"string",` +
			`"enum":["0","1","2","3","4","5","6","7","8","9","*","#"],"description":"The key to press."}}}`,
	},
}

// transferTool is transfer_call's description and parameters: the
// destinations' numbers as an enum, each described in the description,
// and the summary a warm transfer's whisper says. Without destinations
// the tool cannot be given.
func transferTool(dests []Destination) (struct{ description, parameters string }, bool) {
	var b struct{ description, parameters string }
	if len(dests) == 0 {
		return b, false
	}
	var d strings.Builder
	d.WriteString("Transfer the call to a person: say a short line first (\"Let me connect you.\"), then call this. " +
		"If the transfer fails you get the call back with the reason, and you go on with the caller. Destinations:")
	numbers := make([]string, 0, len(dests))
	for _, x := range dests {
		fmt.Fprintf(&d, "\n- %s: %s", x.Number, x.Description)
		numbers = append(numbers, x.Number)
	}
	params := map[string]any{"type": "object", "required": []string{"number"}, "properties": map[string]any{
		"number": map[string]any{"type": "string", "enum": numbers, "description": "The destination's number."},
		"summary": map[string]any{"type": "string",
			"description": "A one or two sentence summary of the call so far, for the person taking it."},
	}}
	raw, _ := json.Marshal(params)
	b.description, b.parameters = d.String(), string(raw)
	return b, true
}

// newToolbox compiles the Agent's tools; a built-in tool this package
// does not run, or parameters that are not a JSON Schema of an object,
// are errors.
func newToolbox(cfg Config) (*toolbox, error) {
	tb := &toolbox{schemas: map[string]*jsonschema.Schema{}, functions: map[string]Function{}}
	for _, name := range cfg.BuiltIn {
		b, ok := builtInTools[name]
		if name == toolTransferCall {
			if b, ok = transferTool(cfg.Transfer); !ok {
				return nil, errors.New("the transfer_call tool needs transfer destinations")
			}
		}
		if !ok {
			return nil, fmt.Errorf("the built-in tool %s is not supported", name)
		}
		if err := tb.add(name, b.description, json.RawMessage(b.parameters)); err != nil {
			return nil, err
		}
	}
	for _, f := range cfg.Functions {
		if _, dup := tb.schemas[f.Name]; dup {
			return nil, fmt.Errorf("the tool name %s is given twice", f.Name)
		}
		params := f.Parameters
		if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if err := tb.add(f.Name, f.Description, params); err != nil {
			return nil, fmt.Errorf("function %s: %w", f.Name, err)
		}
		tb.functions[f.Name] = f
	}
	return tb, nil
}

func (tb *toolbox) add(name, description string, params json.RawMessage) error {
	var asMap map[string]any
	if err := json.Unmarshal(params, &asMap); err != nil {
		return errors.New("the parameters are not a JSON object")
	}
	if t, _ := asMap["type"].(string); t != "object" {
		return errors.New(`the parameters' schema must be of "type": "object"`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return errors.New("the parameters are not JSON")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	// No loader: a $ref outside the schema (a file, a URL) is an error,
	// never a read of the operator's files or network.
	c.UseLoader(jsonschema.SchemeURLLoader{})
	loc := "urn:switchboard:tool:" + name
	if err := c.AddResource(loc, doc); err != nil {
		return fmt.Errorf("the parameters are not a valid JSON Schema: %w", err)
	}
	schema, err := c.Compile(loc)
	if err != nil {
		return fmt.Errorf("the parameters are not a valid JSON Schema: %w", err)
	}
	tb.schemas[name] = schema
	tb.defs = append(tb.defs, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: name, Description: openai.String(description), Parameters: shared.FunctionParameters(asMap),
	}))
	return nil
}

// check returns the call's arguments (JSON; "{}" for none) once they
// pass the tool's schema, or why not, for the model: an unknown tool,
// arguments that are not a JSON object, or the schema's complaints.
func (tb *toolbox) check(name, arguments string) (json.RawMessage, string) {
	schema, ok := tb.schemas[name]
	if !ok {
		return nil, fmt.Sprintf("Error: there is no tool named %q.", name)
	}
	if strings.TrimSpace(arguments) == "" {
		arguments = "{}"
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(arguments))
	if err != nil {
		return nil, "Error: the arguments are not valid JSON; the tool was not called."
	}
	if err := schema.Validate(v); err != nil {
		return nil, "Error: the arguments do not match the tool's parameters; the tool was not called.\n" + schemaProblems(err)
	}
	return json.RawMessage(arguments), ""
}

// schemaProblems is a validation error's list of problems, without its
// first line (which names the schema's internal location).
func schemaProblems(err error) string {
	msg := err.Error()
	if _, rest, ok := strings.Cut(msg, "\n"); ok {
		return rest
	}
	return msg
}

// actions are what a round's built-in tools ask of the response's end:
// end_call's line, press_digit's digits, transfer_call's transfer.
type actions struct {
	goodbye  *string
	digits   string
	transfer *conversation.Chunk
}

// runTools runs a completion's tool calls, in order, and returns the
// response's last chunk when a built-in tool ends it (end_call, with its
// line; press_digit, with its digits; transfer_call, with its number), or
// the messages that give the model the results. The transcript hears of
// every call but end_call, as a tool_call_invocation chunk and a
// tool_call_result chunk; transfer_call's result is the loop's to write,
// once the transfer connected or failed.
func (s *session) runTools(ctx context.Context, r *response, out completion) (*conversation.Chunk,
	[]openai.ChatCompletionMessageParamUnion, error) {
	var calls []invokedCall
	var acts actions
	for _, c := range out.calls {
		call, err := s.runTool(ctx, r, c, &acts)
		if err != nil {
			return nil, nil, err
		}
		calls = append(calls, call)
	}
	if final := acts.final(r); final != nil {
		return final, nil, nil
	}
	return nil, toolRound(out.text, calls), nil
}

// final is the response's last chunk when a built-in tool ended it.
func (a actions) final(r *response) *conversation.Chunk {
	c := conversation.Chunk{ResponseID: r.id, Digits: a.digits, Complete: true}
	if a.transfer != nil {
		c.TransferNumber, c.TransferSummary, c.TransferToolCallID =
			a.transfer.TransferNumber, a.transfer.TransferSummary, a.transfer.TransferToolCallID
	}
	switch {
	case a.goodbye != nil:
		c.Content, c.EndCall = cutRunes(*a.goodbye, MaxResponseChars-r.chars), true
	case a.digits == "" && a.transfer == nil:
		return nil
	}
	return &c
}

// runTool runs one tool call: its invocation and result in the
// transcript (none for end_call, no result for transfer_call), a built-in
// tool's ask kept in acts.
func (s *session) runTool(ctx context.Context, r *response, c toolCall, acts *actions) (invokedCall, error) {
	call := invokedCall{id: newID(), name: c.name, arguments: c.arguments}
	args, problem := s.tools.check(c.name, c.arguments)
	if problem == "" && c.name == toolEndCall {
		var a struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(args, &a)
		acts.goodbye = &a.Message
		call.result = "The call is ending."
		return call, nil
	}
	if err := s.emit(ctx, conversation.Chunk{ResponseID: r.id, Tool: &conversation.Message{
		Role: conversation.RoleToolCallInvocation, ToolCallID: call.id, Name: call.name, Arguments: call.arguments,
	}}); err != nil {
		return call, err
	}
	if problem == "" && c.name == toolTransferCall && acts.transfer == nil {
		var a struct {
			Number, Summary string
		}
		_ = json.Unmarshal(args, &a)
		acts.transfer = &conversation.Chunk{TransferNumber: a.Number, TransferSummary: a.Summary, TransferToolCallID: call.id}
		call.result = "Transferring."
		return call, nil
	}
	ok := false
	switch {
	case problem != "":
		call.result = problem
	case c.name == toolTransferCall:
		call.result = "Error: one transfer at a time; this one was not made."
	case c.name == toolPressDigit:
		var a struct {
			Digit string `json:"digit"`
		}
		_ = json.Unmarshal(args, &a)
		acts.digits += a.Digit
		call.result, ok = "Pressed "+a.Digit+".", true
	default:
		call.result, ok = s.callFunction(ctx, s.tools.functions[c.name], args)
		if ctx.Err() != nil {
			return call, ctx.Err()
		}
	}
	return call, s.emit(ctx, conversation.Chunk{ResponseID: r.id, Tool: &conversation.Message{
		Role: conversation.RoleToolCallResult, ToolCallID: call.id, Content: call.result, Successful: &ok,
	}})
}

// newID is a tool call's id, unique across the call: models' own ids
// (call_0 from some local servers) are not.
func newID() string { return "call_" + rand.Text() }
