package sim

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

const (
	agent  = "agent"
	callee = "callee"

	defaultGreeting = "Hello, this is an automated call."
	goodbye         = "Thank you for your time. Goodbye."
	voicemailNote   = "Hello, this is an automated call. Please call us back at your convenience. Goodbye."
)

// Transcript returns the scripted conversation described in the package
// documentation. It depends only on req and p, so it is stable across calls.
func (c *Carrier) Transcript(_ context.Context, req telephony.Request, p telephony.Progress) ([]telephony.Turn, error) {
	if err := endedConnected(p); err != nil {
		return nil, err
	}
	if p.Disposition == telephony.AnsweringMachine {
		return voicemail(req), nil
	}
	return conversation(req), nil
}

func voicemail(req telephony.Request) []telephony.Turn {
	return []telephony.Turn{
		{Speaker: callee, Text: "You have reached the voicemail of " + req.To + ". Please leave a message after the tone."},
		{Speaker: agent, Text: voicemailNote},
	}
}

func conversation(req telephony.Request) []telephony.Turn {
	greeting := req.Greeting
	if greeting == "" {
		greeting = defaultGreeting
	}
	turns := make([]telephony.Turn, 0, 2*len(req.Fields)+2)
	turns = append(turns, telephony.Turn{Speaker: agent, Text: greeting})
	for _, f := range req.Fields {
		turns = append(turns,
			telephony.Turn{Speaker: agent, Text: question(f)},
			telephony.Turn{Speaker: callee, Text: "My " + words(f.Name) + " is " + answer(req, f) + "."},
		)
	}
	return append(turns, telephony.Turn{Speaker: agent, Text: goodbye})
}

// words spells a field name the way people say it.
func words(name string) string { return strings.ReplaceAll(name, "_", " ") }

// question asks for f, preferring the description since it was written for
// the analyzer and reads better than an identifier.
func question(f telephony.Field) string {
	d := strings.TrimRight(strings.TrimSpace(f.Description), ".?! ")
	if d == "" {
		return "Could you tell me your " + words(f.Name) + "?"
	}
	return "Could you tell me " + lowerFirst(d) + "?"
}

// lowerFirst lowercases a leading capital so the description fits mid
// sentence, but leaves acronyms such as "NPS score" alone.
func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if next, _ := utf8.DecodeRuneInString(s[n:]); unicode.IsUpper(next) {
		return s
	}
	return string(unicode.ToLower(r)) + s[n:]
}

// answer is the callee's value for f: a string variable echoes back, so tests
// can see variables flow through, and other types get fixed values.
func answer(req telephony.Request, f telephony.Field) string {
	switch f.Type {
	case "number":
		return "42"
	case "boolean":
		return "yes"
	}
	if v, ok := req.Variables[f.Name].(string); ok {
		return v
	}
	return "simulated"
}
