package validation

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Redacted stands for a credential a problem would have echoed.
const Redacted = "REDACTED"

// A URL's userinfo: scheme://user:password@ (or a token as the user).
var userinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#@\s"]*@`)

// A query parameter whose name says it carries a secret: ?token=...,
// &api_key=..., X-Amz-Signature=...
var querySecret = regexp.MustCompile(`(?i)([?&;][a-z0-9_.\-]*(?:token|key|secret|password|passwd|pwd|signature|sig|auth|credential|session)[a-z0-9_.\-]*=)[^&#\s"]*`)

// Redact is s with the credentials of every URL in it replaced by
// Redacted: the userinfo (user:password@) and the values of query
// parameters named like secrets. A 422 echoes what a client sent to the
// client, but through logs, proxies and support tickets an echoed password
// travels further than the request did.
func Redact(s string) string {
	if !strings.Contains(s, "://") && !strings.ContainsAny(s, "?&;") {
		return s
	}
	s = userinfo.ReplaceAllString(s, "${1}"+Redacted+"@")
	return querySecret.ReplaceAllString(s, "${1}"+Redacted)
}

// RedactItem is item with the credentials in its message and input
// redacted (Redact), in every string of a structured input.
func RedactItem(item Item) Item {
	item.Msg = Redact(item.Msg)
	item.Input = redactValue(item.Input)
	return item
}

func redactValue(v any) any {
	switch v := v.(type) {
	case string:
		return Redact(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = redactValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redactValue(e)
		}
		return out
	case nil, bool, float64, int, int64, json.Number:
		return v
	}
	return redactEncoded(v)
}

// redactEncoded redacts an input of another type (a []string, a struct)
// through its JSON form, which is how it would be echoed.
func redactEncoded(v any) any {
	text, err := json.Marshal(v)
	if err != nil {
		return v
	}
	redacted := Redact(string(text))
	if redacted == string(text) {
		return v
	}
	var out any
	if json.Unmarshal([]byte(redacted), &out) != nil {
		return Redacted
	}
	return out
}
