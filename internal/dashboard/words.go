package dashboard

import (
	"cmp"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-dev/switchboard/internal/webhook"
)

// Words for the codes a call carries, for people who do not read the API
// reference.
var dispositionWords = map[string]string{
	"answered":          "Answered by a person",
	"answering_machine": "Answered by a machine (voicemail)",
	"no_answer":         "Nobody answered",
	"busy":              "The line was busy",
	"rejected":          "The callee rejected the call",
	"unreachable":       "The number could not be reached",
	"invalid_number":    "The number does not exist",
	"carrier_failure":   "The carrier failed to connect the call",
}

var reasonWords = map[string]string{
	"agent_hangup":        "the agent ended the call",
	"user_hangup":         "the callee hung up",
	"api_hangup":          "stopped from the API or the dashboard",
	"canceled":            "stopped before it was dialed",
	"max_duration":        "it reached the agent's maximum duration (or a conversation's maximum turns)",
	"no_answer":           "nobody answered",
	"dial_busy":           "the line was busy",
	"dial_rejected":       "the callee rejected the call",
	"dial_failed":         "the number could not be reached",
	"invalid_destination": "the number does not exist",
	"carrier_error":       "the carrier failed",
	"voicemail":           "a voicemail answered",
	// Agents that stream to the organization's bot (issue 26).
	"stream_connect_failed": "the agent's bot could not be reached",
	"stream_disconnected":   "the connection to the agent's bot dropped",
	// Agents that converse with the organization's language model
	// (spec.conversation), named as Retell names them.
	"error_llm":                           "the agent's language model failed (an error, or no answer in time)",
	"error_llm_websocket_open":            "the agent's conversation server could not be reached",
	"error_llm_websocket_lost_connection": "the connection to the agent's conversation server was lost",
	"error_llm_websocket_runtime":         "the agent's conversation server closed the connection with an error",
	"error_llm_websocket_corrupt_payload": "the agent's conversation server sent a message Switchboard could not read",
	"inactivity":                          "the callee stayed silent through every reminder",
	// SIP answers whose media the outbound address policy refuses (issue 36).
	"address_refused": "the carrier asked for audio at an address the operator does not allow",
	// Transfers to a person (issue 41).
	"call_transfer":    "the agent transferred the callee to a person",
	"transfer_bridged": "the agent transferred the callee to a person, and they talked until the call ended",
	// A trunk with media srtp-required whose callee answered in clear.
	"srtp_required": "the callee answered without the encrypted audio (SRTP) the trunk requires",
}

// transferWords say how a call's transfer to a person went, by result.
var transferWords = map[string]string{
	"transferred": "Transferred: the far end connected the person",
	"bridged":     "Connected to the person",
	"busy":        "The person's line was busy",
	"no_answer":   "The person did not answer",
	"declined":    "The person declined",
	"refused":     "The transfer was refused",
	"failed":      "The transfer failed",
	"not_allowed": "Not allowed (the agent's transfer destinations or the number lists)",
}

// outcomeWords name a campaign contact's last outcome: a disposition, or
// why its call was refused or skipped. Short, as a legend's entries.
var outcomeWords = map[string]string{
	"answered":          "Answered",
	"answering_machine": "Voicemail",
	"no_answer":         "No answer",
	"busy":              "Busy",
	"rejected":          "Rejected",
	"unreachable":       "Unreachable",
	"invalid_number":    "Invalid number",
	"carrier_failure":   "Carrier failure",
	"dnc_blocked":       "Skipped: on a do-not-call list",
	"number_blocked":    "Skipped: the number is blocked",
	"window_closed":     "Skipped: the calling window never opens",
	"failed":            "Failed",
}

// outcomeInWords is an outcome's name; a code it does not know reads as
// words ("missing_variables": "Missing variables").
func outcomeInWords(code string) string {
	if w, ok := outcomeWords[code]; ok {
		return w
	}
	words := strings.ReplaceAll(code, "_", " ")
	if words == "" {
		return none
	}
	return strings.ToUpper(words[:1]) + words[1:]
}

// outcomeCount is one outcome of a campaign, for a list.
type outcomeCount struct {
	Code, Label string
	Count       int64
}

// outcomesInWords lists outcomes most frequent first (then by name), each
// in words.
func outcomesInWords(outcomes map[string]int64) []outcomeCount {
	out := make([]outcomeCount, 0, len(outcomes))
	for code, n := range outcomes {
		out = append(out, outcomeCount{Code: code, Label: outcomeInWords(code), Count: n})
	}
	slices.SortFunc(out, func(a, b outcomeCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Label, b.Label))
	})
	return out
}

func dispositionInWords(code string) string {
	if w, ok := dispositionWords[code]; ok {
		return w
	}
	return code
}

func reasonInWords(code string) string {
	if code == "" {
		return ""
	}
	if w, ok := reasonWords[code]; ok {
		return w
	}
	return strings.ReplaceAll(code, "_", " ")
}

// testInterpretation says what a test event's result means for whoever
// runs the receiver.
func testInterpretation(res webhook.Result) string {
	code := res.StatusCode
	switch {
	case code >= 200 && code < 300:
		return "Delivered: the receiver answered " + strconv.Itoa(code) + " and accepted the event."
	case code == 401 || code == 403:
		return "The receiver refused the event (" + strconv.Itoa(code) + "): it did not accept the signature or " +
			"its own authentication. Check that it verifies with this endpoint's current secret."
	case code == 404:
		return "The receiver answered 404: the URL's path is wrong, or nothing listens there."
	case code >= 500:
		return "The receiver failed (" + strconv.Itoa(code) + "): an error on its side; look at its logs."
	case code != 0:
		return "The receiver answered " + strconv.Itoa(code) + ", which is not a success (2xx)."
	case strings.Contains(strings.ToLower(res.Err), "timed out") || strings.Contains(strings.ToLower(res.Err), "timeout"):
		return "The receiver did not answer in time (" + res.Err + "): it is too slow or unreachable."
	case res.Err != "":
		return "The receiver could not be reached: " + res.Err + "."
	}
	return "The receiver could not be reached."
}

func microTime(t *metav1.MicroTime) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}

func sortExtracted(xs []extracted) {
	slices.SortFunc(xs, func(a, b extracted) int { return strings.Compare(a.Name, b.Name) })
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"disposition": dispositionInWords,
	"reason":      reasonInWords,
	"transfer":    func(result string) string { return cmp.Or(transferWords[result], result) },
	"when": func(t any) string {
		switch t := t.(type) {
		case time.Time:
			return formatTime(t)
		case *time.Time:
			if t != nil {
				return formatTime(*t)
			}
		case *metav1.Time:
			if t != nil {
				return formatTime(t.Time)
			}
		case metav1.Time:
			return formatTime(t.Time)
		case string: // the API's RFC 3339 times, as the campaign object has them
			return apiTimeText(t)
		case *string:
			if t != nil {
				return apiTimeText(*t)
			}
		case *metav1.MicroTime:
			if t != nil {
				return formatTime(t.Time)
			}
		}
		return none
	},
	"duration": durationText,
	"outcomes": outcomesInWords,
	"opens":    opensText,
	// orNone shows an empty field as every page shows one.
	"orNone": func(s string) string { return cmp.Or(s, none) },
	"deref": func(s *string) string {
		if s == nil {
			return none
		}
		return cmp.Or(*s, none)
	},
	"selected": func(a, b string) bool { return a == b },
	"csrf":     func() string { return csrfField },
	"prefix":   func() string { return Prefix },
	"percent":  percent,
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
}

// none is how every page shows a field without a value.
const none = "—"

// formatTime is how every page shows a time, to the second.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return none
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// apiTimeText is an RFC 3339 time of an API object as every page shows a
// time; what does not parse is shown as it is.
func apiTimeText(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return cmp.Or(s, none)
	}
	return formatTime(t)
}

// opensText is when a group of waiting contacts opens (at, the API's
// RFC 3339 time): in the group's zone, named, when it has one, since the
// calling window is in local time (08:00 in New York), else as every
// page shows a time (UTC).
func opensText(at string, zones []string) string {
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return cmp.Or(at, none)
	}
	if len(zones) == 1 {
		if loc, err := time.LoadLocation(zones[0]); err == nil {
			return t.In(loc).Format("2006-01-02 15:04:05 ") + zones[0]
		}
	}
	return formatTime(t)
}

// durationText is how every page shows a call's duration (ms): to the
// second, as the list shows it ("1m5s").
func durationText(ms *int64) string {
	if ms == nil {
		return none
	}
	return (time.Duration(*ms) * time.Millisecond).Round(time.Second).String()
}
