package stream

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// shape lists every field path of a JSON document with its JSON type, and
// the value of the fields the protocol fixes.
func shape(t *testing.T, doc []byte) map[string]string {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, doc)
	}
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			out[path] = "object"
			for k, e := range x {
				// customParameters are the agent's own: only its type is fixed.
				if path != ".start.customParameters" {
					walk(path+"."+k, e)
				}
			}
		case []any:
			out[path] = "array"
			for _, e := range x {
				walk(path+"[]", e)
			}
		case string:
			out[path] = "string"
		case float64:
			out[path] = "number"
		default:
			out[path] = "other"
		}
	}
	walk("", v)
	return out
}

var fixed = []string{".event", ".protocol", ".version", ".start.tracks[]", ".start.mediaFormat.encoding",
	".start.mediaFormat.sampleRate", ".start.mediaFormat.channels", ".media.track", ".dtmf.track"}

func fixedValues(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	get := func(keys ...string) any {
		var cur any = v
		for _, k := range keys {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = m[k]
		}
		return cur
	}
	for _, p := range fixed {
		switch p {
		case ".start.tracks[]":
			out[p] = get("start", "tracks")
		default:
			out[p] = get(splitPath(p)...)
		}
	}
	return out
}

func splitPath(p string) []string { return strings.Split(strings.TrimPrefix(p, "."), ".") }

// TestMessagesMatchTwilioReference encodes each message Switchboard sends
// and compares it with the reference's example in testdata.
func TestMessagesMatchTwilioReference(t *testing.T) {
	s := &Session{cfg: Config{CallID: "call_0123abcd", Namespace: "demo", From: "+14155550100", To: "+14155551234",
		Parameters: map[string]string{"customer": "Ada"}}, ids: NewIDs("demo", "call_0123abcd")}
	mulaw := [frameSamples]byte{}
	for i := range mulaw {
		mulaw[i] = byte(i)
	}
	cases := map[string]outMsg{
		"connected": {event: EventConnected},
		"start":     {event: EventStart},
		"media":     {event: EventMedia, chunk: 1, ts: 5, mulaw: mulaw},
		"dtmf":      {event: EventDTMF, name: "1"},
		"mark":      {event: EventMark, name: "my label"},
		"stop":      {event: EventStop},
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			golden, err := os.ReadFile(filepath.Join("testdata", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.encode(nil, 3, &m)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := keys(shape(t, got)), keys(shape(t, golden)); !slices.Equal(g, w) {
				t.Errorf("fields differ from the reference:\n got %v\nwant %v\n%s", shape(t, got), shape(t, golden), got)
			}
			for p, w := range fixedValues(t, golden) {
				if g := fixedValues(t, got)[p]; !jsonEqual(g, w) {
					t.Errorf("%s = %v, reference says %v", p, g, w)
				}
			}
		})
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+":"+v)
	}
	sort.Strings(out)
	return out
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// The hand-written media encoder writes exactly what encoding/json would.
func TestAppendMediaIsTheMarshalledMessage(t *testing.T) {
	mulaw := make([]byte, frameSamples)
	for i := range mulaw {
		mulaw[i] = byte(255 - i)
	}
	ids := NewIDs("demo", "call_ff")
	want, err := json.Marshal(Media{Event: EventMedia, SequenceNumber: "42", StreamSid: ids.StreamSid,
		Media: MediaInfo{Track: "inbound", Chunk: "40", Timestamp: "812", Payload: base64.StdEncoding.EncodeToString(mulaw)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := appendMedia(nil, 42, 40, 812, ids.StreamSid, mulaw); string(got) != string(want) {
		t.Errorf("appendMedia:\n got %s\nwant %s", got, want)
	}
	buf := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { buf = appendMedia(buf[:0], 42, 40, 812, ids.StreamSid, mulaw) }); n != 0 {
		t.Errorf("appendMedia allocates %.0f times per message; want 0", n)
	}
}

func TestIDsAreTwilioShapedAndStable(t *testing.T) {
	a, b := NewIDs("demo", "call_1"), NewIDs("demo", "call_1")
	if a != b {
		t.Fatalf("ids of one call differ: %v %v", a, b)
	}
	for prefix, id := range map[string]string{"AC": a.AccountSid, "CA": a.CallSid, "MZ": a.StreamSid} {
		if !regexp.MustCompile(`^` + prefix + `[0-9a-f]{32}$`).MatchString(id) {
			t.Errorf("%s id %q: want %s and 32 hex digits", prefix, id, prefix)
		}
	}
	if c := NewIDs("demo", "call_2"); c.CallSid == a.CallSid || c.StreamSid == a.StreamSid || c.AccountSid != a.AccountSid {
		t.Errorf("call_2's ids %v against call_1's %v: want other call and stream ids, the same account", c, a)
	}
}
