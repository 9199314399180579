package sim

import (
	"context"
	"fmt"
	"strings"
	"time"
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
// documentation, each turn placed in the recording (see Recording). It
// depends only on req and p, so it is stable across calls. A streamed
// call's says what happened on its stream (see streams).
func (c *Carrier) Transcript(ctx context.Context, req telephony.Request, p telephony.Progress) ([]telephony.Turn, error) {
	if err := endedConnected(p); err != nil {
		return nil, err
	}
	if c.streamed(req) {
		if s := c.streams.ended(req.CallID); s != nil {
			return s.transcript(), nil
		}
		return nil, nil // cut off by a restart: nothing of it is left
	}
	if c.conversed(req) {
		if s := c.convs.ended(req.CallID); s != nil {
			return s.transcript(), nil
		}
		return nil, nil
	}
	return turns(req, p, c.allowTransfer(ctx, req)), nil
}

// turns is the conversation of a connected call, placed in its recording;
// allow is the call's transfer guard.
func turns(req telephony.Request, p telephony.Progress, allow func(string) error) []telephony.Turn {
	var t []telephony.Turn
	switch {
	case p.Disposition == telephony.AnsweringMachine:
		t = voicemail(req)
	case scripted(req):
		t = runScript(req, answeredAt(p), allow).turns
	default:
		t = questions(req)
	}
	return place(t, recordingLength(p))
}

// answeredAt is when the call was answered (when it ended, should the
// progress not say).
func answeredAt(p telephony.Progress) time.Time {
	switch {
	case p.AnsweredAt != nil:
		return *p.AnsweredAt
	case p.EndedAt != nil:
		return *p.EndedAt
	}
	return time.Time{}
}

// place gives each turn an equal slot of the recording, of which it speaks
// the first four fifths: the offsets the recording's tones follow.
func place(turns []telephony.Turn, length time.Duration) []telephony.Turn {
	if len(turns) == 0 || length <= 0 {
		return turns
	}
	slot := length / time.Duration(len(turns))
	for i := range turns {
		turns[i].Start = (time.Duration(i) * slot).Truncate(time.Millisecond)
		turns[i].End = (time.Duration(i)*slot + slot*4/5).Truncate(time.Millisecond)
	}
	return turns
}

func voicemail(req telephony.Request) []telephony.Turn {
	return []telephony.Turn{
		{Speaker: callee, Text: "You have reached the voicemail of " + req.To + ". Please leave a message after the tone."},
		{Speaker: agent, Text: voicemailNote},
	}
}

// questions is the call of an agent without a script: its greeting, each
// field asked and answered, a goodbye.
func questions(req telephony.Request) []telephony.Turn {
	greeting := req.Greeting
	if greeting == "" {
		greeting = defaultGreeting
	}
	turns := make([]telephony.Turn, 0, 2*len(req.Fields)+2)
	turns = append(turns, telephony.Turn{Speaker: agent, Text: greeting})
	for _, f := range req.Fields {
		turns = append(turns,
			telephony.Turn{Speaker: agent, Text: question(f)},
			telephony.Turn{Speaker: callee, Text: answer(req, f)},
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

// The callee's answers, in the ways people give them: a number field is
// always four, a boolean always yes, a string the call variable of the same
// name (or "simulated"). Which wording is chosen by the destination's last
// two digits (see Wording), so a demo shows the analysis reading real
// phrasing, not a sentence made for it.
var (
	numberAnswers  = [...]string{"Four.", "There will be four of us.", "Um, four people.", "4."}
	booleanAnswers = [...]string{"Yes.", "Yeah, sure.", "That's right.", "Yep, that's correct."}
	stringAnswers  = [...]string{"My %[1]s is %[2]s.", "It's %[2]s.", "Um, %[2]s.", "%[2]s."}
)

// Wording is the variant of the callee's answers a call to `to` gets: its
// last two digits modulo 4 (0 for a number without digits).
func Wording(to string) int {
	n := 0
	for _, r := range suffix(to)[max(len(suffix(to))-2, 0):] {
		if r >= '0' && r <= '9' {
			n = n*10 + int(r-'0')
		}
	}
	return n % len(numberAnswers)
}

// answer is the callee's answer to f: a string variable echoes back, so
// tests can see variables flow through, and other types get fixed values.
func answer(req telephony.Request, f telephony.Field) string {
	w := Wording(req.To)
	switch f.Type {
	case "number":
		return numberAnswers[w]
	case "boolean":
		return booleanAnswers[w]
	}
	value := "simulated"
	if v, ok := req.Variables[f.Name].(string); ok {
		value = v
	}
	return fmt.Sprintf(stringAnswers[w], words(f.Name), value)
}
