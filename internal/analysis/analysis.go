// Package analysis produces the post-call analysis: a summary of the call
// and the agent's extracted-data fields.
//
// Analyzer is the seam for another analyzer (an LLM service, say). Rules,
// the built-in one, is a simple rule-based analyzer standing in for an LLM,
// which cannot run here. It reads only what the callee said or keyed: digits
// keyed in answer to a gather step (SIP calls) fill that step's field, and
// statements of the form "my <field name> is <value>" (case-insensitive,
// underscores in the name spoken as spaces), which is how the simulated
// callee answers, fill the field they name.
package analysis

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// Result is the analysis of one call.
type Result struct {
	Summary string
	// ExtractedData has exactly one key per requested field; a value is nil
	// when the conversation did not provide it in the field's type.
	ExtractedData map[string]any
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
			data[f.Name] = extract(f, transcript)
		}
	}
	return Result{Summary: summary(p, data, transcript), ExtractedData: data}
}

// extract returns f's value as keyed or stated by the callee, or nil. The
// last answer wins so that a callee can correct themselves.
func extract(f telephony.Field, transcript []telephony.Turn) any {
	re := statement(f.Name)
	var value any
	for _, t := range transcript {
		if t.Speaker != "callee" {
			continue
		}
		if t.Field == f.Name {
			if v := keyed(f.Type, t.Digits); v != nil {
				value = v
			}
			continue
		}
		for _, m := range re.FindAllStringSubmatch(t.Text, -1) {
			if v := convert(f.Type, strings.TrimSpace(m[1])); v != nil {
				value = v
			}
		}
	}
	return value
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

// convert turns stated text into the field's type, or nil when it does not
// fit (nil is JSON null in the API).
func convert(typ, text string) any {
	switch typ {
	case "number":
		n, err := strconv.ParseFloat(text, 64)
		// NaN and Inf parse but cannot be encoded as JSON.
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return nil
		}
		return n
	case "boolean":
		return boolean(text)
	case "string":
		if text == "" {
			return nil
		}
		return text
	}
	return nil
}

// keyed turns DTMF digits into the field's type: a number parses them, a
// boolean takes 1 as yes and 0 or 2 as no, a string keeps them as keyed.
func keyed(typ, digits string) any {
	if typ == "boolean" {
		switch digits {
		case "1":
			return true
		case "0", "2":
			return false
		}
		return nil
	}
	return convert(typ, digits)
}

func boolean(text string) any {
	switch strings.ToLower(text) {
	case "yes", "true", "yeah":
		return true
	case "no", "false":
		return false
	}
	return nil
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

// keyedSummary lists what the callee keyed, in order.
func keyedSummary(transcript []telephony.Turn) string {
	var parts []string
	for _, t := range transcript {
		if t.Speaker == "callee" && t.Field != "" && t.Digits != "" {
			parts = append(parts, fmt.Sprintf("%s for %s", t.Digits, t.Field))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " The callee keyed " + strings.Join(parts, ", ") + "."
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
