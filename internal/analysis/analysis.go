// Package analysis produces the post-call analysis: a summary of the call
// and the agent's extracted-data fields.
//
// Analyzer is the seam for another analyzer. Rules, the built-in one, reads
// only what the callee said or keyed, through package understand (numbers
// in words and digits, yes or no in its varied wordings, dates and times):
//
//  1. A gather step's answer first: the callee's turn that answered the
//     step asking for the field (its keys, the choice it matched, or its
//     words).
//  2. Else the transcript by rules: the callee's reply to an agent line
//     that asks for the field (naming it, saying its description, or a
//     prompt of a gather step for it), and statements of the form "my
//     <field name> is <value>". A field that gather steps ask by choices
//     takes the choice the words name (choices.go), as the step would.
//
// Within each, the last answer wins, so a callee can correct themselves.
// Silence is not "no": a turn a gather step took no answer from (noInput,
// noMatch) and a note of what happened ("(no answer)", Turn.Note) are
// never read for a value, so such a field stays nil unless the callee
// gives it elsewhere.
// LLM (llm.go) adds an agent's own language model on top of the rules.
package analysis

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/phone"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/understand"
)

// Result is the analysis of one call.
type Result struct {
	Summary string
	// ExtractedData has exactly one key per requested field; a value is nil
	// when the conversation did not provide it in the field's type.
	ExtractedData map[string]any
	// Fallback says what of a language model's analysis was not used and
	// why (empty: all of it, or there was none): recorded as an event,
	// never in the call object.
	Fallback string
}

// Analyzer produces the post-call analysis of an ended call from what the
// carrier reports: its progress and its transcript.
type Analyzer interface {
	Analyze(ctx context.Context, req telephony.Request, p telephony.Progress, transcript []telephony.Turn) (Result, error)
}

// Rules is the built-in rule-based Analyzer (see the package comment).
type Rules struct{}

var _ Analyzer = Rules{}

// Analyze implements Analyzer; it never fails.
func (Rules) Analyze(_ context.Context, req telephony.Request, p telephony.Progress, transcript []telephony.Turn) (Result, error) {
	return Analyze(req, p, transcript), nil
}

// Analyze summarizes the call and extracts req.Fields from the transcript.
// It is deterministic: the same inputs give the same Result.
func Analyze(req telephony.Request, p telephony.Progress, transcript []telephony.Turn) Result {
	data := make(map[string]any, len(req.Fields))
	for _, f := range req.Fields {
		data[f.Name] = nil
		// A call that never connected has no conversation to trust.
		if p.Disposition.Connected() {
			data[f.Name] = extract(f, scriptAsks(req, f), transcript, at(req, p))
		}
	}
	return Result{Summary: summary(p, data, transcript), ExtractedData: data}
}

// extract returns f's value as the callee gave it, or nil (see the package
// comment). now places relative dates ("tomorrow").
func extract(f telephony.Field, a asking, transcript []telephony.Turn, now time.Time) any {
	if v := gathered(f, a, transcript, now); v != nil {
		return v
	}
	return spoken(f, a, transcript, now)
}

// gathered is the last answer to a gather step that asked for f.
func gathered(f telephony.Field, a asking, transcript []telephony.Turn, now time.Time) any {
	var value any
	for _, t := range transcript {
		if !answers(t) || t.Field != f.Name {
			continue
		}
		var v any
		switch {
		case t.Digits != "":
			// Keys, or the value a gather took from speech: a choice's
			// "yes", a captured "4" or date.
			if v = keyed(f.Type, t.Digits); v == nil {
				v = fromText(f, t.Digits, now)
			}
		case t.Branch != "":
			v = fromText(f, t.Branch, now)
		default:
			v = a.read(f, t.Text, now)
		}
		if v != nil {
			value = v
		}
	}
	return value
}

// spoken is the last value the callee stated for f, or gave in reply to an
// agent line asking for it (naming it, or a prompt of its gather steps).
func spoken(f telephony.Field, a asking, transcript []telephony.Turn, now time.Time) any {
	re := statement(f.Name)
	asked := false
	var value any
	for _, t := range transcript {
		if t.Speaker != "callee" {
			asked = !t.Note && (asksFor(t.Text, f) || a.asks(t.Text))
			continue
		}
		if !answers(t) {
			asked = false // the question went unanswered
			continue
		}
		// Only the first turn after the question is its answer, unless it
		// states another field ("my age is ...").
		if asked && t.Field == "" && !statesOther(t.Text, f.Name) {
			if v := a.read(f, t.Text, now); v != nil {
				value = v
			}
		}
		asked = false
		for _, m := range re.FindAllStringSubmatch(t.Text, -1) {
			if v := a.read(f, strings.TrimSpace(m[1]), now); v != nil {
				value = v
			}
		}
	}
	return value
}

// answers reports whether t is a callee's turn that can hold an answer:
// words they said or keys they pressed, not a note of what happened
// ("(no answer)", "(not recognized: ...)") nor a turn a gather step took
// no answer from. A placeholder read as speech turned silence into "no"
// (understand.Match("(no answer)", yes/no choices) is "no").
func answers(t telephony.Turn) bool {
	return t.Speaker == "callee" && !t.Note && t.Branch != telephony.BranchNoInput && t.Branch != telephony.BranchNoMatch
}

// anyStatement matches "my <up to four words> is".
var anyStatement = regexp.MustCompile(`(?i)\bmy\s+((?:[a-z]+\s+){0,3}[a-z]+)\s+is\b`)

// statesOther reports whether text states a field other than name.
func statesOther(text, name string) bool {
	own := strings.Join(understand.Words(strings.ReplaceAll(name, "_", " ")), " ")
	for _, m := range anyStatement.FindAllStringSubmatch(text, -1) {
		if strings.Join(understand.Words(m[1]), " ") != own {
			return true
		}
	}
	return false
}

// asksFor reports whether an agent's line asks for f: it names the field
// (underscores as spaces) or says its description.
func asksFor(line string, f telephony.Field) bool {
	said := " " + strings.Join(understand.Words(line), " ") + " "
	for _, phrase := range []string{strings.ReplaceAll(f.Name, "_", " "), f.Description} {
		if w := understand.Words(phrase); len(w) > 0 && strings.Contains(said, " "+strings.Join(w, " ")+" ") {
			return true
		}
	}
	return false
}

// statement matches "my <name words> is <value>", the value running to the
// end of the sentence: a [.!?] followed by a space or the end of the turn,
// so values such as "3.5" or "a@example.com" stay whole.
func statement(name string) *regexp.Regexp {
	words := strings.Fields(strings.ReplaceAll(name, "_", " "))
	for i, w := range words {
		words[i] = regexp.QuoteMeta(w)
	}
	return regexp.MustCompile(`(?i)\bmy\s+` + strings.Join(words, `\s+`) + `\s+is\s+(.+?)(?:[.!?]+(?:\s|$)|$)`)
}

// fromText reads the field's value in what the callee said, or nil when it
// holds none of the field's type (nil is JSON null in the API). A string
// field named or described as a date or a time holds one, read relative to
// now (YYYY-MM-DD, HH:MM, or both as YYYY-MM-DDTHH:MM); any other string
// field holds what was said, without hesitations and lead-ins ("um, it's
// Ada" is "Ada").
func fromText(f telephony.Field, text string, now time.Time) any {
	switch f.Type {
	case "number":
		if n, ok := understand.Number(text); ok {
			return n
		}
	case "boolean":
		if yes, ok := understand.YesNo(text); ok {
			return yes
		}
	case "string":
		return stringValue(f, text, now)
	}
	return nil
}

func stringValue(f telephony.Field, text string, now time.Time) any {
	kind := " " + strings.Join(understand.Words(f.Name+" "+strings.ReplaceAll(f.Name, "_", " ")+" "+f.Description), " ") + " "
	wantsDate := strings.Contains(kind, " date ") || strings.Contains(kind, " day ")
	wantsTime := strings.Contains(kind, " time ")
	if wantsDate || wantsTime {
		return when(text, now, wantsDate, wantsTime)
	}
	if declined(text) {
		return nil
	}
	if v := answerText(text); v != "" {
		return v
	}
	return nil
}

// declines are answers that give no value.
var declines = []understand.Choice{{Value: "declined", Phrases: []string{"rather not", "not say", "prefer not",
	"dont know", "no idea", "not sure", "cant remember", "no comment"}}}

// declined reports whether text is a yes, a no or a refusal rather than a
// value for a string field.
func declined(text string) bool {
	if _, ok := understand.YesNo(text); ok {
		return true
	}
	_, ok := understand.Match(text, declines)
	return ok
}

// when reads a date, a time or both, as the field asks.
func when(text string, now time.Time, wantsDate, wantsTime bool) any {
	day, dayOK := understand.Date(text, now)
	clock, clockOK := understand.Time(text)
	switch {
	case wantsDate && wantsTime && dayOK && clockOK:
		return day.Format("2006-01-02") + "T" + clock.String()
	case wantsDate && dayOK:
		return day.Format("2006-01-02")
	case wantsTime && clockOK:
		return clock.String()
	}
	return nil
}

// leadIns are what people put before an answer, hesitations included.
var leadIns = regexp.MustCompile(`(?i)^(?:(?:um+|uh+|er+|erm|ah|hmm|well|so|oh|yes|yeah|sure|ok|okay)\b[\s,.]*)*` +
	`(?:(?:it'?s|it is|that'?s|that is|this is|i'?m|i am|my name is|the answer is)\s+)?`)

// answerText is what was said without lead-ins and final punctuation.
func answerText(text string) string {
	text = leadIns.ReplaceAllString(strings.TrimSpace(text), "")
	return strings.TrimSpace(strings.TrimRight(text, ".!? "))
}

// keyed turns DTMF digits into the field's type: a number parses them, a
// boolean takes 1 as yes and 0 or 2 as no, a string keeps them as keyed.
func keyed(typ, digits string) any {
	switch typ {
	case "boolean":
		switch digits {
		case "1":
			return true
		case "0", "2":
			return false
		}
	case "number":
		if n, err := strconv.ParseFloat(digits, 64); err == nil && !math.IsInf(n, 0) && !math.IsNaN(n) {
			return n
		}
	case "string":
		if digits != "" {
			return digits
		}
	}
	return nil
}

// at is the moment relative dates are read from: when the call ended, in
// the callee's time zone (from their number, as the call's gathers read
// them), so that "tomorrow" is tomorrow where they are.
func at(req telephony.Request, p telephony.Progress) time.Time {
	zone := phone.CalleeZone(req.To)
	if p.EndedAt != nil {
		return p.EndedAt.In(zone)
	}
	return time.Now().In(zone)
}

// unanswered completes "The call was not answered: ...".
var unanswered = map[telephony.Disposition]string{
	telephony.Busy:           "the line was busy",
	telephony.NoAnswer:       "nobody answered",
	telephony.Rejected:       "the callee declined the call",
	telephony.Unreachable:    "the number could not be reached",
	telephony.InvalidNumber:  "the number is not in service",
	telephony.CarrierFailure: "the carrier failed to connect it",
}

// endings say who ended a connected call, by disconnection reason.
var endings = map[string]string{
	"user_hangup":      " The callee hung up.",
	"max_duration":     " The call reached the agent's maximum duration.",
	"operator_restart": " The call was cut off when Switchboard restarted.",
	"worker_lost":      " The call was cut off when the replica carrying it was lost.",
	"address_refused":  " Switchboard hung up: the carrier asked for audio at an address the operator does not allow.",
	"call_transfer":    " The agent transferred the callee to a person, and the carrier connected them.",
	"transfer_bridged": " The agent transferred the callee to a person, who answered and was connected until the call ended.",
	"srtp_required":    " Switchboard hung up: the trunk requires encrypted audio (SRTP) and the callee answered without it.",
}

func summary(p telephony.Progress, data map[string]any, transcript []telephony.Turn) string {
	switch p.Disposition {
	case telephony.Answered:
		return fmt.Sprintf("The callee answered and spoke with the agent for %s; %s.",
			seconds(p.Duration), captured(data)) + keyedSummary(transcript) + endings[p.DisconnectionReason]
	case telephony.AnsweringMachine:
		if len(transcript) > 0 && !agentSpoke(transcript) {
			return "The call reached an answering machine; the agent hung up without leaving a message."
		}
		return fmt.Sprintf("The call reached an answering machine; the agent left a message (the call lasted %s).",
			seconds(p.Duration)) + endings[p.DisconnectionReason]
	}
	if why, ok := unanswered[p.Disposition]; ok {
		return "The call was not answered: " + why + "."
	}
	if p.Phase != telephony.Ended {
		return "The call has not ended yet."
	}
	return fmt.Sprintf("The call ended with disposition %q.", p.Disposition)
}

// keyedSummary lists the gathers' answers in order: what the callee keyed,
// then what they said that a gather took.
func keyedSummary(transcript []telephony.Turn) string {
	var keyed, said []string
	for _, t := range transcript {
		if t.Speaker != "callee" || t.Field == "" || t.Digits == "" {
			continue
		}
		part := fmt.Sprintf("%s for %s", t.Digits, t.Field)
		if t.Recognizer != "" {
			said = append(said, part)
		} else {
			keyed = append(keyed, part)
		}
	}
	var out string
	if len(keyed) > 0 {
		out += " The callee keyed " + strings.Join(keyed, ", ") + "."
	}
	if len(said) > 0 {
		out += " The callee answered " + strings.Join(said, ", ") + "."
	}
	return out
}

func agentSpoke(transcript []telephony.Turn) bool {
	for _, t := range transcript {
		if t.Speaker == "agent" {
			return true
		}
	}
	return false
}

// captured says how many requested fields got a value.
func captured(data map[string]any) string {
	got := 0
	for _, v := range data {
		if v != nil {
			got++
		}
	}
	switch total := len(data); {
	case total == 0:
		return "no details were requested"
	case total == 1 && got == 1:
		return "the requested detail was captured"
	case total == 1:
		return "the requested detail was not captured"
	default:
		return fmt.Sprintf("%d of %d requested details were captured", got, total)
	}
}

func wholeSeconds(d time.Duration) int64 { return int64(d.Round(time.Second) / time.Second) }

func seconds(d time.Duration) string {
	if n := wholeSeconds(d); n != 1 {
		return fmt.Sprintf("%d seconds", n)
	}
	return "1 second"
}
