package validation

import (
	"encoding/json"
	"testing"
)

// An enum problem reads as pydantic words it, with the allowed values in
// its ctx, as the REST API's 422s show it.
func TestNotOneOf(t *testing.T) {
	var p Problems
	p.NotOneOf([]any{"query", "status"}, "done", []string{"pending", "succeeded", "failed"})
	got, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	const want = `[{"type":"enum","loc":["query","status"],"msg":"Input should be 'pending', 'succeeded' or 'failed'",` +
		`"input":"done","ctx":{"expected":"'pending', 'succeeded' or 'failed'"}}]`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestExpected(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   string
	}{
		{nil, ""},
		{[]string{"a"}, "'a'"},
		{[]string{"a", "b"}, "'a' or 'b'"},
		{[]string{"a", "b", "c"}, "'a', 'b' or 'c'"},
	} {
		if got := Expected(tc.values); got != tc.want {
			t.Errorf("Expected(%q) = %q, want %q", tc.values, got, tc.want)
		}
	}
}
