package validation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Object is a request body that is a JSON object, being decoded: its
// top-level fields, and the problems found in them so far.
type Object struct {
	Fields map[string]json.RawMessage
	Problems
}

// ParseObject reads a body that must be a JSON object, in UTF-8, with no
// key twice (which of two values was meant is anyone's guess). When it is
// not one, it returns the one problem that says why.
func ParseObject(body []byte) (*Object, []Item) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, []Item{{Type: "missing", Loc: []any{"body"}, Msg: "Field required", Input: nil}}
	}
	if !utf8.Valid(body) {
		return nil, []Item{invalidUTF8(body)}
	}
	// One parse on the hot path; the error path re-reads the body to
	// tell malformed JSON from JSON that is not an object.
	o := &Object{}
	err := json.Unmarshal(body, &o.Fields)
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		return nil, []Item{{Type: "model_attributes_type", Loc: []any{"body"},
			Msg: "Input should be a valid dictionary or object to extract fields from", Input: Input(body)}}
	case err != nil:
		return nil, []Item{JSONInvalid(err)}
	case o.Fields == nil: // the body is null
		return nil, []Item{{Type: "missing", Loc: []any{"body"}, Msg: "Field required", Input: nil}}
	}
	if key, repeated := repeatedKey(body); repeated {
		return nil, []Item{DuplicateKey([]any{"body", key}, key)}
	}
	return o, nil
}

// FailField records a problem of type typ with the top-level field, raw
// being the value found there.
func (o *Object) FailField(typ, field, msg string, raw json.RawMessage) {
	o.Fail(typ, []any{"body", field}, msg, Input(raw), nil)
}

// JSONInvalid is the problem of a body that is not JSON, located at the
// byte where parsing failed when err says.
func JSONInvalid(err error) Item {
	item := Item{Type: "json_invalid", Loc: []any{"body"}, Msg: "JSON decode error", Input: map[string]any{},
		Ctx: map[string]any{"error": err.Error()}}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		item.Loc = []any{"body", syntax.Offset}
	}
	return item
}

// invalidUTF8 is the json_invalid item of a body that is not UTF-8 (RFC
// 8259 section 8.1), located at its first bad byte.
func invalidUTF8(body []byte) Item {
	offset := 0
	for offset < len(body) {
		r, size := utf8.DecodeRune(body[offset:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		offset += size
	}
	return Item{Type: "json_invalid", Loc: []any{"body", offset}, Msg: "JSON decode error", Input: map[string]any{},
		Ctx: map[string]any{"error": fmt.Sprintf("invalid UTF-8 at byte %d; JSON must be UTF-8", offset)}}
}

// repeatedKey reports the first key the top-level object of a valid JSON
// object holds twice.
func repeatedKey(obj []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		key, _ := tok.(string)
		if seen[key] {
			return key, true
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

// DuplicateKey is the problem of an object, at loc, that holds key twice.
func DuplicateKey(loc []any, key string) Item {
	return Item{Type: "duplicate_key", Loc: loc,
		Msg: "Key appears more than once in the same object; send each key once", Input: key}
}
