package sim

import (
	"fmt"
	"strings"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/phone"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
	"github.com/switchboard-dev/switchboard/internal/understand"
)

// MaxScriptSteps bounds a simulated script that goes round (a gather
// that jumps back, answered alike every time): once that many steps ran,
// the greeting included, the call ends as a real one does at the agent's
// maxDurationSeconds, with disconnection_reason max_duration. A script
// that does not loop runs at most 65 steps (64 and the greeting).
const MaxScriptSteps = 256

// The simulated callee's way of answering a script's gathers, by the
// destination's last four digits (see the package comment).
const (
	silentCallee   = "0010" // says and keys nothing, at every gather
	confusedCallee = "0011" // nonsense the first time each gather asks, then a valid answer
	nonsenseCallee = "0012" // nonsense at every attempt
)

// simRecognizer is the Recognizer of the simulated callee's speech: the
// simulator knows what was said, so its confidence is 1.
const simRecognizer = "simulated"

// nonsense is what the simulated callee says, or keys, for an answer no
// gather can take (but a text capture, which takes any words).
const (
	nonsenseSaid = "Purple monkey dishwasher."
	nonsenseKeys = "*"
)

// scripted reports whether the call runs its agent's script on the
// simulator (agents without one keep the fields' questions).
func scripted(req telephony.Request) bool {
	return req.Agent != nil && len(req.Agent.Spec.Script) > 0
}

// step is one step of the script as run: the greeting is a say step
// before the agent's own.
type step = switchboardv1.ScriptStep

// scriptRun is a run of the agent's script against the simulated callee.
type scriptRun struct {
	req   telephony.Request
	now   time.Time // what relative dates are read from
	turns []telephony.Turn
	// asked counts the attempts of each gather step so far.
	asked map[int]int
	// allow is the call's transfer guard.
	allow func(to string) error
	// transfer is the last transfer's outcome; transferAt the index of its
	// first turn, personAt of the person's line (-1: none).
	transfer             *telephony.TransferOutcome
	transferAt, personAt int
}

// scriptResult is a script's run: its turns, whether MaxScriptSteps cut
// it, and its last transfer (with where it is in the turns).
type scriptResult struct {
	turns                []telephony.Turn
	cut                  bool
	transfer             *telephony.TransferOutcome
	transferAt, personAt int
}

// runScript runs the agent's script as the SIP engine does (greeting,
// then the steps in order or where a gather's answer leads, hanging up
// after the last one, at a hangup step or once a transfer connected), the
// simulated callee answering each gather and the number plan deciding
// transfers (allow is the guard), and returns its turns; cut is true when
// MaxScriptSteps stopped it. answeredAt places relative dates
// ("tomorrow").
func runScript(req telephony.Request, answeredAt time.Time, allow func(string) error) scriptResult {
	spec := req.Agent.Spec
	steps := spec.Script
	if spec.Greeting != "" {
		steps = append([]step{{Say: spec.Greeting}}, steps...)
	}
	index := map[string]int{}
	for i, s := range steps {
		if s.ID != "" {
			index[s.ID] = i
		}
	}
	r := &scriptRun{req: req, now: answeredAt.In(phone.CalleeZone(req.To)), asked: map[int]int{}, allow: allow, personAt: -1}
	for i, ran := 0, 0; i < len(steps); ran++ {
		if ran == MaxScriptSteps {
			return r.result(true)
		}
		s := steps[i]
		next := ""
		switch {
		case s.Say != "":
			r.agent(s.Say)
		case s.Play != nil:
			ref := s.Play.ConfigMapKeyRef
			r.turns = append(r.turns, telephony.Turn{Speaker: agent, Text: fmt.Sprintf("(plays %s/%s)", ref.Name, ref.Key)})
		case s.Gather != nil:
			next = r.gather(i, s.Gather)
		case s.PressDigits != nil:
			r.turns = append(r.turns, telephony.Turn{Speaker: agent, Text: "pressed " + s.PressDigits.Digits, Note: true})
		case s.Transfer != nil:
			if r.transferStep(s.Transfer) {
				return r.result(false)
			}
			next = s.Transfer.Next
		case s.Hangup != nil:
			return r.result(false)
		}
		if next == "" {
			i++
		} else {
			i = index[next]
		}
	}
	return r.result(false)
}

func (r *scriptRun) result(cut bool) scriptResult {
	return scriptResult{turns: r.turns, cut: cut, transfer: r.transfer, transferAt: r.transferAt, personAt: r.personAt}
}

// transferStep hands the callee to the step's person by the number plan:
// the hold line (when it bridges), the person's line when answered, the
// outcome's note. True when the callee reached the person.
func (r *scriptRun) transferStep(step *switchboardv1.TransferStep) bool {
	to := tts.Fill(step.To, r.req.Variables)
	opts := withDefaults(step.TransferOptions, r.req.Variables)
	out, line := simTransfer(opts, to, r.allow(to))
	r.transferAt, r.personAt = len(r.turns), -1
	if out.Result != switchboardv1.TransferNotAllowed && opts.bridges(to) {
		r.agent(opts.hold)
	}
	if whispered(opts, out) {
		r.turns = append(r.turns, telephony.Turn{Speaker: agent, Text: whisperNote(opts, to, ""), Note: true})
	}
	if line != "" {
		r.personAt = len(r.turns)
		r.turns = append(r.turns, telephony.Turn{Speaker: agent, Text: personNote(to, line), Note: true})
	}
	r.turns = append(r.turns, telephony.Turn{Speaker: agent, Text: transferNote(out), Note: true})
	r.transfer = &out
	return out.Result.Succeeded()
}

// agent says text, its placeholders filled; a text that fills to nothing
// is not said.
func (r *scriptRun) agent(text string) {
	if filled := tts.Fill(text, r.req.Variables); filled != "" {
		r.turns = append(r.turns, telephony.Turn{Speaker: agent, Text: filled})
	}
}

// calleeAnswer is the simulated callee's answer to one attempt of a
// gather: keys, words, or nothing.
type calleeAnswer struct {
	// keys are the keys pressed, digits those kept (the finish key
	// dropped).
	keys, digits, said string
	silent             bool
}

// gather runs the gather of step i as the SIP engine does: the prompt,
// the callee's answer, then a re-prompt on no answer or one it cannot use
// as the retries allow, each decision in the transcript. It returns the
// ID of the step to go to ("": the next one).
func (r *scriptRun) gather(i int, g *switchboardv1.GatherStep) string {
	u := understand.Gather{Capture: string(g.Capture), Next: g.Next}
	for _, c := range g.Choices {
		u.Choices = append(u.Choices, understand.GatherChoice{Value: c.Value, Phrases: c.Phrases, Digits: c.Digits, Next: c.Next})
	}
	r.agent(g.Prompt)
	var noInput, noMatch int
	for {
		a := r.answer(i, g, u)
		var d understand.Decision
		var retry *switchboardv1.GatherRetry
		var tries *int
		switch {
		case a.silent:
			if u.KeyedDigits() && g.NoInput == nil {
				return g.Next // as gathers of keyed digits always did
			}
			d, retry, tries = understand.Decision{Branch: telephony.BranchNoInput}, g.NoInput, &noInput
		case a.keys != "":
			d, retry, tries = u.Keys(a.digits), g.NoMatch, &noMatch
		default:
			d, retry, tries = u.Speech(a.said, r.now), g.NoMatch, &noMatch
		}
		if d.Matched {
			r.record(g, a, d)
			return d.Next
		}
		if retry != nil && *tries < retry.Tries() {
			*tries++
			r.record(g, a, d)
			if retry.Prompt != "" {
				r.agent(retry.Prompt)
			} else {
				r.agent(g.Prompt)
			}
			continue
		}
		if retry != nil {
			d.Next = retry.Next
		}
		r.record(g, a, d)
		return d.Next
	}
}

// record puts the callee's answer in the transcript as the SIP engine
// does: the field and value it gave when it was one, the branch taken.
func (r *scriptRun) record(g *switchboardv1.GatherStep, a calleeAnswer, d understand.Decision) {
	t := telephony.Turn{Speaker: callee, Branch: d.Branch, Next: d.Next}
	if d.Matched {
		t.Field, t.Digits = g.Field, d.Value
	}
	switch {
	case a.silent:
		t.Text, t.Note = "(no answer)", true
	case a.keys != "":
		t.Text = "pressed " + a.keys
	default:
		t.Text, t.Confidence, t.Recognizer = a.said, 1, simRecognizer
	}
	r.turns = append(r.turns, t)
}

// answer is the simulated callee's answer to the next attempt of the
// gather of step i, by the number plan: silence, nonsense, or a valid
// answer (which the gather is shown to take).
func (r *scriptRun) answer(i int, g *switchboardv1.GatherStep, u understand.Gather) calleeAnswer {
	attempt := r.asked[i]
	r.asked[i]++
	keys, speech := g.Inputs()
	switch suffix(r.req.To) {
	case silentCallee:
		return calleeAnswer{silent: true}
	case nonsenseCallee:
		return nonsense(g, speech)
	case confusedCallee:
		if attempt == 0 {
			return nonsense(g, speech)
		}
	}
	if speech {
		return calleeAnswer{said: r.say(g, u)}
	}
	if keys {
		return press(r.keyed(g), g)
	}
	return calleeAnswer{silent: true}
}

// nonsense is an answer that selects no choice and is no value of a
// capture type (a text capture takes it: any words are text).
func nonsense(g *switchboardv1.GatherStep, speech bool) calleeAnswer {
	if speech {
		return calleeAnswer{said: nonsenseSaid}
	}
	return press(nonsenseKeys, g)
}

// The callee's spoken answers to a gather, by Wording: a choice is named
// by its first phrase (or its value), a capture given in its type.
var (
	choiceAnswers = [...]string{"%s.", "Um, %s.", "%s, please.", "I'd say %s."}
	digitsAnswers = [...]string{"One two three four.", "It's one two three four.", "Um, one two three four.", "1234."}
	dateAnswers   = [...]string{"Tomorrow.", "Tomorrow, please.", "Um, tomorrow.", "How about tomorrow?"}
	timeAnswers   = [...]string{"Seven pm.", "At seven in the evening.", "Um, seven pm.", "19:00."}
)

// say is the callee's spoken answer to g: the first choice, or a value of
// the capture type, in the call's wording (see Wording). Should a wording
// not select the first choice (phrases of other choices in it), the bare
// phrase is said.
func (r *scriptRun) say(g *switchboardv1.GatherStep, u understand.Gather) string {
	w := Wording(r.req.To)
	if len(g.Choices) > 0 {
		c := g.Choices[0]
		phrase := c.Value
		if len(c.Phrases) > 0 {
			phrase = c.Phrases[0]
		}
		said := capitalize(fmt.Sprintf(choiceAnswers[w], phrase))
		if d := u.Speech(said, r.now); !d.Matched || d.Value != c.Value {
			said = capitalize(phrase) + "."
		}
		return said
	}
	switch g.Capture {
	case switchboardv1.CaptureNumber:
		return numberAnswers[w]
	case switchboardv1.CaptureYesNo:
		return booleanAnswers[w]
	case switchboardv1.CaptureDigits:
		return digitsAnswers[w]
	case switchboardv1.CaptureDate:
		return dateAnswers[w]
	case switchboardv1.CaptureTime:
		return timeAnswers[w]
	}
	name := g.Field
	if name == "" {
		name = "answer"
	}
	value := "simulated"
	if v, ok := r.req.Variables[g.Field].(string); ok && v != "" {
		value = v
	}
	return fmt.Sprintf(stringAnswers[w], words(name), value)
}

// keyed is what the callee keys for g when it takes keys only: the first
// choice with digits, a value of the capture type, or for a gather of
// keyed digits a value of its field's type (number 4, boolean 1 for yes,
// else 1234). A capture that keys cannot give (date, time, text) and
// choices without digits get 1, which the gather cannot take.
func (r *scriptRun) keyed(g *switchboardv1.GatherStep) string {
	if g.Choices != nil {
		for _, c := range g.Choices {
			if c.Digits != "" {
				return c.Digits
			}
		}
		return "1"
	}
	switch g.Capture {
	case switchboardv1.CaptureNumber:
		return "4"
	case switchboardv1.CaptureDigits:
		return "1234"
	case "":
	default:
		return "1"
	}
	digits := "1234"
	for _, f := range r.req.Fields {
		if f.Name == g.Field {
			switch f.Type {
			case "number":
				digits = "4"
			case "boolean":
				digits = "1"
			}
		}
	}
	if n := int(g.NumDigits); n > len(digits) {
		digits = strings.Repeat("0", n-len(digits)) + digits
	}
	return digits
}

// press is the callee keying digits as the engine's input takes them:
// key by key, the input complete at the finish key, after numDigits
// digits or at a choice's digits; the finish key is pressed after the
// digits when none of these completed it (without a finish key the
// gather's timeout does). pressed is every key, digits the keys kept.
func press(keys string, g *switchboardv1.GatherStep) calleeAnswer {
	var pressed, digits strings.Builder
	for i := range len(keys) {
		k := keys[i]
		pressed.WriteByte(k)
		if g.FinishOnKey != "" && k == g.FinishOnKey[0] {
			return calleeAnswer{keys: pressed.String(), digits: digits.String()}
		}
		digits.WriteByte(k)
		if g.NumDigits > 0 && digits.Len() >= int(g.NumDigits) || selects(digits.String(), g.Choices) {
			return calleeAnswer{keys: pressed.String(), digits: digits.String()}
		}
	}
	return calleeAnswer{keys: pressed.String() + g.FinishOnKey, digits: digits.String()}
}

// selects reports whether digits are a choice's and could be no other's.
func selects(digits string, choices []switchboardv1.GatherChoice) bool {
	selected := false
	for _, c := range choices {
		switch {
		case c.Digits == digits:
			selected = true
		case strings.HasPrefix(c.Digits, digits):
			return false
		}
	}
	return selected
}

// capitalize writes s's first letter as a capital, as the callee's other
// answers start.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
