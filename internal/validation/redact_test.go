package validation

import (
	"reflect"
	"testing"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@example.com/a":                    "https://REDACTED@example.com/a",
		"http://ghp_token@github.com/x":                    "http://REDACTED@github.com/x",
		"see wss://a:b@h:443/p?q=1 and HTTPS://c:d@e":      "see wss://REDACTED@h:443/p?q=1 and HTTPS://REDACTED@e",
		"https://e.com/h?api_key=abc&x=1&sig=zz#f":         "https://e.com/h?api_key=REDACTED&x=1&sig=REDACTED#f",
		"https://e.com/h?X-Amz-Signature=abc&X-Amz-Date=1": "https://e.com/h?X-Amz-Signature=REDACTED&X-Amz-Date=1",
		"https://e.com/users/me@example.org":               "https://e.com/users/me@example.org", // a path, not userinfo
		"+14155551234":                                     "+14155551234",
		"a&b":                                              "a&b",
		"mail me@example.org":                              "mail me@example.org",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactItem(t *testing.T) {
	item := RedactItem(Item{Type: "value_error", Msg: "Value error, https://u:p@h is not allowed",
		Input: map[string]any{"a": []any{"https://u:p@h", 1.5}, "b": []string{"https://x:y@h?token=t"}}})
	want := Item{Type: "value_error", Msg: "Value error, https://REDACTED@h is not allowed",
		Input: map[string]any{"a": []any{"https://REDACTED@h", 1.5}, "b": []any{"https://REDACTED@h?token=REDACTED"}}}
	if !reflect.DeepEqual(item, want) {
		t.Fatalf("= %#v\nwant %#v", item, want)
	}
}
