package chat

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCheckArguments(t *testing.T) {
	tb, err := newToolbox(Config{BuiltIn: []string{toolEndCall, toolPressDigit}, Functions: []Function{{
		Name: "book", Parameters: json.RawMessage(`{"type":"object","required":["size","when"],"properties":{
			"size":{"type":"integer","minimum":1},"when":{"type":"string"},"price":{"type":"number"},
			"vegan":{"type":"boolean"},"names":{"type":"array","items":{"type":"string"}},
			"room":{"type":"string","enum":["terrace","hall"]},"extra":{"type":"object","required":["note"]}}}`),
	}, {Name: "ping"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool, args string
		problem    string // a part of the problem; "" for valid arguments
	}{
		{"book", `{"size":4,"when":"20:00"}`, ""},
		{"book", `{"size":4,"when":"20:00","price":12.5,"vegan":true,"names":["Ada"],"room":"hall","extra":{"note":"x"}}`, ""},
		{"book", `{"when":"20:00"}`, "missing property 'size'"},
		{"book", `{"size":4.5,"when":"20:00"}`, "want integer"},
		{"book", `{"size":"4","when":"20:00"}`, "want integer"},
		{"book", `{"size":0,"when":"20:00"}`, "minimum"},
		{"book", `{"size":4,"when":20}`, "want string"},
		{"book", `{"size":4,"when":"20:00","vegan":"yes"}`, "want boolean"},
		{"book", `{"size":4,"when":"20:00","names":"Ada"}`, "want array"},
		{"book", `{"size":4,"when":"20:00","names":[1]}`, "want string"},
		{"book", `{"size":4,"when":"20:00","room":"roof"}`, "must be one of"},
		{"book", `{"size":4,"when":"20:00","extra":{}}`, "missing property 'note'"},
		{"book", `[4]`, "want object"},
		{"book", `{"size":4,`, "not valid JSON"},
		{"ping", ``, ""},
		{"ping", `{}`, ""},
		{"end_call", ``, ""},
		{"end_call", `{"message":"Bye"}`, ""},
		{"end_call", `{"message":7}`, "want string"},
		{"press_digit", `{"digit":"#"}`, ""},
		{"press_digit", `{"digit":"12"}`, "must be one of"},
		{"press_digit", `{}`, "missing property 'digit'"},
		{"launch", `{}`, `no tool named "launch"`},
	} {
		args, problem := tb.check(tc.tool, tc.args)
		switch {
		case tc.problem == "" && problem != "":
			t.Errorf("%s %s: refused: %s", tc.tool, tc.args, problem)
		case tc.problem == "" && !json.Valid(args):
			t.Errorf("%s %s: arguments %q are not JSON", tc.tool, tc.args, args)
		case tc.problem != "" && !strings.Contains(problem, tc.problem):
			t.Errorf("%s %s: problem %q, want it to say %q", tc.tool, tc.args, problem, tc.problem)
		}
	}
}

func TestCutRunes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{{"héllo", 2, "hé"}, {"héllo", 0, ""}, {"héllo", 9, "héllo"}, {"héllo", -1, ""}} {
		if got := cutRunes(tc.in, tc.n); got != tc.want {
			t.Errorf("cutRunes(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
