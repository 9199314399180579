package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/nyaruka/phonenumbers"

	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/calls"
)

// Limits of a create-call request (README, "Limits"). Variables and
// metadata are bounded by callpolicy's size limits, which Calls applied
// with kubectl meet too; the body limit binds before they add up: 100
// variables of 1 KiB do not fit in 64 KiB.
const (
	// MaxBodyBytes bounds a request body (create-call and webhook
	// endpoints); a longer one is 413.
	MaxBodyBytes = 64 << 10
	// MaxJSONDepth bounds how deeply metadata and variables nest objects
	// and arrays, the object itself counting as 1.
	MaxJSONDepth = 8
	// MaxMetadataBytes bounds metadata, measured as compact JSON (what is
	// stored), so indentation does not count.
	MaxMetadataBytes = callpolicy.MaxMetadataBytes
	// MaxVariables bounds the number of variables of a call.
	MaxVariables = callpolicy.MaxVariables
	// MaxVariableNameChars bounds a variable's name, in characters.
	MaxVariableNameChars = callpolicy.MaxVariableNameChars
	// MaxVariableValueBytes bounds a variable's value: a string's UTF-8
	// bytes, or another value's compact JSON.
	MaxVariableValueBytes = callpolicy.MaxVariableValueBytes
)

// Field names and the aliases accepted for them, first match wins. The
// variables aliases let requests written for the third-party create-call
// endpoint work unchanged.
var (
	agentIDNames   = []string{"agent_id", "override_agent_id"}
	variablesNames = []string{"variables", "partner_llm_dynamic_variables", "retell_llm_dynamic_variables"}
)

// createCallRequest is a decoded, validated POST /v1/calls body.
type createCallRequest = calls.Request

// decoder collects every validation problem, as the 422 array reports all.
type decoder struct {
	fields map[string]json.RawMessage
	errs   []ValidationItem
	region string
}

// readBody reads a request body of at most MaxBodyBytes. When it cannot, it
// answers the request itself (413 for a longer body) and reports false.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeDetail(w, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("The request body is larger than the limit of %d bytes (64 KiB).", MaxBodyBytes))
		return nil, false
	case err != nil:
		writeValidation(w, []ValidationItem{{Type: "body_read_error", Loc: []any{"body"},
			Msg: "The request body could not be read.", Input: nil}})
		return nil, false
	}
	return body, true
}

func decodeCreateCall(body []byte, region string) (*createCallRequest, []ValidationItem) {
	d := &decoder{region: region}
	if errs := d.parseObject(body); errs != nil {
		return nil, errs
	}
	req := &createCallRequest{
		AgentID:    d.agentID(),
		ToNumber:   d.phone("to_number", true),
		FromNumber: d.phone("from_number", false),
	}
	req.RawVars, req.Variables = d.variables()
	req.Metadata = d.metadata()
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return req, nil
}

// parseObject reads a body that must be a JSON object, in UTF-8, with no
// key twice (which of two values was meant is anyone's guess).
func (d *decoder) parseObject(body []byte) []ValidationItem {
	if len(bytes.TrimSpace(body)) == 0 {
		return []ValidationItem{{Type: "missing", Loc: []any{"body"}, Msg: "Field required", Input: nil}}
	}
	if !utf8.Valid(body) {
		return []ValidationItem{invalidUTF8(body)}
	}
	// One parse on the hot path; the error path re-reads the body to
	// tell malformed JSON from JSON that is not an object.
	err := json.Unmarshal(body, &d.fields)
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		return []ValidationItem{{Type: "model_attributes_type", Loc: []any{"body"},
			Msg: "Input should be a valid dictionary or object to extract fields from", Input: decodeInput(body)}}
	case err != nil:
		return []ValidationItem{jsonInvalid(err)}
	case d.fields == nil: // the body is null
		return []ValidationItem{{Type: "missing", Loc: []any{"body"}, Msg: "Field required", Input: nil}}
	}
	if key, repeated := repeatedKey(body); repeated {
		return []ValidationItem{duplicateKey([]any{"body", key}, key)}
	}
	return nil
}

func jsonInvalid(err error) ValidationItem {
	item := ValidationItem{Type: "json_invalid", Loc: []any{"body"}, Msg: "JSON decode error", Input: map[string]any{},
		Ctx: map[string]any{"error": err.Error()}}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		item.Loc = []any{"body", syntax.Offset}
	}
	return item
}

// invalidUTF8 is the json_invalid item of a body that is not UTF-8 (RFC
// 8259 section 8.1), located at its first bad byte.
func invalidUTF8(body []byte) ValidationItem {
	offset := 0
	for offset < len(body) {
		r, size := utf8.DecodeRune(body[offset:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		offset += size
	}
	return ValidationItem{Type: "json_invalid", Loc: []any{"body", offset}, Msg: "JSON decode error", Input: map[string]any{},
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

func duplicateKey(loc []any, key string) ValidationItem {
	return ValidationItem{Type: "duplicate_key", Loc: loc,
		Msg: "Key appears more than once in the same object; send each key once", Input: key}
}

// lookup returns the first field among names (aliases) that holds a value;
// null counts as absent, so `"variables": null` does not hide an alias.
func (d *decoder) lookup(names []string) (string, json.RawMessage, bool) {
	for _, n := range names {
		if raw, ok := d.fields[n]; ok && string(raw) != "null" {
			return n, raw, true
		}
	}
	return names[0], nil, false
}

func (d *decoder) fail(typ, field, msg string, input json.RawMessage) {
	d.errs = append(d.errs, ValidationItem{Type: typ, Loc: []any{"body", field}, Msg: msg, Input: decodeInput(input)})
}

// decodeInput is raw JSON as a validation item's input. Numbers keep their
// text; one beyond a float64 is echoed as a string, which every client can
// decode.
func decodeInput(raw []byte) any {
	if raw == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var in any
	if err := dec.Decode(&in); err != nil {
		return nil
	}
	return finiteNumbers(in)
}

func finiteNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if _, err := v.Float64(); err != nil {
			return v.String()
		}
	case map[string]any:
		for k, e := range v {
			v[k] = finiteNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = finiteNumbers(e)
		}
	}
	return v
}

// str decodes a string field; ok is false when absent, null or invalid.
func (d *decoder) str(names []string, required bool) (name, value string, ok bool) {
	name, raw, present := d.lookup(names)
	if !present {
		if required {
			d.fail("missing", name, "Field required", nil)
		}
		return name, "", false
	}
	if err := json.Unmarshal(raw, &value); err != nil {
		d.fail("string_type", name, "Input should be a valid string", raw)
		return name, "", false
	}
	return name, value, true
}

func (d *decoder) agentID() string {
	name, s, ok := d.str(agentIDNames, true)
	if !ok {
		return ""
	}
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		d.fail("uuid_parsing", name, "Input should be a valid UUID", mustJSON(s))
		return ""
	}
	return id.String()
}

// phoneSyntax is how a dialable number may be written: an optional leading
// "+", then groups of digits, a group possibly in parentheses, separated by
// spaces and at most one "-" or "." between two groups:
// "+1 (415) 555-1234", "415.555.1234", "+44 (0)20 7183 8750". Anything else
// is refused rather than guessed at, because a misread number calls
// someone else: a "-" or "." before the first digit (-14155550123 is not
// +14155550123), a separator at the end, doubled separators, a "+" or
// parenthesis out of place, letters (1-800-FLOWERS is not read as a
// keypad), extensions (a carrier cannot dial them) and any other symbol.
var phoneSyntax = regexp.MustCompile(`^(\+ *)?(\([0-9]+\)|[0-9]+)( *[-.]? *(\([0-9]+\)|[0-9]+))*$`)

// e164Syntax is the Call resource's pattern for numbers (api/v1alpha1): a
// number libphonenumber accepts but the apiserver would refuse must be a
// 422 here, not a failed create.
var e164Syntax = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// phone validates a number with libphonenumber's rules and returns E.164.
// A number without "+" is read in the server's default region.
func (d *decoder) phone(field string, required bool) string {
	name, s, ok := d.str([]string{field}, required)
	if !ok {
		return ""
	}
	e164, ok := normalizePhone(s, d.region)
	if !ok {
		d.fail("value_error", name, phoneError(name), mustJSON(s))
	}
	return e164
}

func phoneError(field string) string {
	return "Value error, " + field + " is not a valid phone number; use E.164, for example +14155551234"
}

// normalizePhone validates a number written as phoneSyntax allows with
// libphonenumber's rules and returns it in E.164.
func normalizePhone(s, region string) (string, bool) {
	if !phoneSyntax.MatchString(strings.TrimSpace(s)) {
		return "", false
	}
	num, err := phonenumbers.Parse(s, region)
	if err != nil || num.GetExtension() != "" || !phonenumbers.IsValidNumber(num) {
		return "", false
	}
	e164 := phonenumbers.Format(num, phonenumbers.E164)
	return e164, e164Syntax.MatchString(e164)
}

// variables decodes the variables object: every name non-empty and at most
// MaxVariableNameChars long, every value at most MaxVariableValueBytes, at
// most MaxVariables of them.
func (d *decoder) variables() (json.RawMessage, map[string]any) {
	vars := map[string]any{}
	name, raw := d.object(variablesNames)
	if raw == nil {
		return nil, vars
	}
	var values map[string]json.RawMessage
	_ = json.Unmarshal(raw, &values) // object() checked it is one
	if len(values) > MaxVariables {
		d.errs = append(d.errs, ValidationItem{Type: "too_long", Loc: []any{"body", name},
			Msg:   fmt.Sprintf("Variables should have at most %d entries, not %d", MaxVariables, len(values)),
			Input: decodeInput(raw), Ctx: map[string]any{"max_length": MaxVariables, "actual_length": len(values)}})
		return nil, vars
	}
	before := len(d.errs)
	for _, key := range slices.Sorted(maps.Keys(values)) {
		d.variable(name, key, values[key])
	}
	if len(d.errs) > before {
		return nil, vars
	}
	_ = json.Unmarshal(raw, &vars) // checkJSON saw every number fit a float64
	return raw, vars
}

func (d *decoder) variable(field, name string, value json.RawMessage) {
	loc := []any{"body", field, name}
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		d.errs = append(d.errs, ValidationItem{Type: "string_too_short", Loc: loc,
			Msg: "Variable names should have at least 1 character", Input: name, Ctx: map[string]any{"min_length": 1}})
	case n > MaxVariableNameChars:
		d.errs = append(d.errs, ValidationItem{Type: "string_too_long", Loc: loc,
			Msg:   fmt.Sprintf("Variable names should have at most %d characters", MaxVariableNameChars),
			Input: name, Ctx: map[string]any{"max_length": MaxVariableNameChars}})
	}
	n := callpolicy.ValueBytes(value)
	if n <= MaxVariableValueBytes {
		return
	}
	var s string
	if json.Unmarshal(value, &s) == nil {
		d.errs = append(d.errs, ValidationItem{Type: "string_too_long", Loc: loc,
			Msg:   fmt.Sprintf("Variable values should have at most %d bytes, not %d", MaxVariableValueBytes, n),
			Input: s, Ctx: map[string]any{"max_length": MaxVariableValueBytes}})
		return
	}
	d.errs = append(d.errs, ValidationItem{Type: "too_long", Loc: loc,
		Msg:   fmt.Sprintf("Variable values should have at most %d bytes as JSON, not %d", MaxVariableValueBytes, n),
		Input: decodeInput(value), Ctx: map[string]any{"max_length": MaxVariableValueBytes}})
}

// metadata decodes the metadata object, at most MaxMetadataBytes as
// compact JSON.
func (d *decoder) metadata() json.RawMessage {
	name, raw := d.object([]string{"metadata"})
	if len(raw) > MaxMetadataBytes {
		d.errs = append(d.errs, ValidationItem{Type: "too_long", Loc: []any{"body", name},
			Msg:   fmt.Sprintf("Metadata should have at most %d bytes as compact JSON, not %d", MaxMetadataBytes, len(raw)),
			Input: decodeInput(raw), Ctx: map[string]any{"max_length": MaxMetadataBytes, "actual_length": len(raw)}})
		return nil
	}
	return raw
}

// object decodes an optional JSON object field (null counts as absent) and
// returns it compacted, or nil when it is absent or invalid: not an
// object, or failing checkJSON.
func (d *decoder) object(names []string) (string, json.RawMessage) {
	name, raw, present := d.lookup(names)
	if !present {
		return name, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		d.fail("dict_type", name, "Input should be a valid dictionary", raw)
		return name, nil
	}
	if item := checkJSON(raw, []any{"body", name}); item != nil {
		d.errs = append(d.errs, *item)
		return name, nil
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, raw) // raw is valid JSON
	return name, compact.Bytes()
}

// checkJSON walks a valid JSON value stored for the caller and returns the
// first of what would make it unfaithful or unbounded: a key twice in an
// object, a number beyond a float64 (which the Kubernetes API server cannot
// store: 1e400 used to fail the create with a 503), or objects and arrays
// nested deeper than MaxJSONDepth. loc is the value's location.
func checkJSON(raw []byte, loc []any) *ValidationItem {
	w := &jsonWalker{dec: json.NewDecoder(bytes.NewReader(raw)), raw: raw, path: slices.Clone(loc)}
	w.dec.UseNumber()
	return w.value(0)
}

type jsonWalker struct {
	dec  *json.Decoder
	raw  []byte
	path []any
}

// value checks the next value, found inside depth levels of nesting.
func (w *jsonWalker) value(depth int) *ValidationItem {
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err != nil {
		item := jsonInvalid(err) // cannot happen: the body parsed
		return &item
	}
	switch t := tok.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(string(t), 64); err != nil {
			return &ValidationItem{Type: "finite_number", Loc: slices.Clone(w.path), Input: string(t),
				Msg: "Input should be a finite number: this one is beyond a 64-bit float (about ±1.8e308); send it as a string"}
		}
	case json.Delim:
		if depth+1 > MaxJSONDepth {
			return &ValidationItem{Type: "too_deep", Loc: slices.Clone(w.path), Input: w.valueFrom(start),
				Msg: fmt.Sprintf("Objects and arrays should nest at most %d levels deep here", MaxJSONDepth),
				Ctx: map[string]any{"max_depth": MaxJSONDepth}}
		}
		seen := map[string]bool{}
		for i := 0; w.dec.More(); i++ {
			var step any = i
			if t == '{' {
				keyTok, _ := w.dec.Token()
				key, _ := keyTok.(string)
				if seen[key] {
					item := duplicateKey(append(slices.Clone(w.path), key), key)
					return &item
				}
				seen[key] = true
				step = key
			}
			w.path = append(w.path, step)
			if item := w.value(depth + 1); item != nil {
				return item
			}
			w.path = w.path[:len(w.path)-1]
		}
		_, _ = w.dec.Token() // the closing delimiter
	}
	return nil
}

// valueFrom decodes, as an item's input, the value that starts after
// offset (past the separators between it and the token before).
func (w *jsonWalker) valueFrom(offset int64) any {
	rest := bytes.TrimLeft(w.raw[offset:], " \t\r\n,:")
	var v json.RawMessage
	if json.NewDecoder(bytes.NewReader(rest)).Decode(&v) != nil {
		return nil
	}
	return decodeInput(v)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// DecodeCallRequest validates a create-call body as POST /v1/calls does,
// for the dashboard's form: the same checks, the same messages.
func DecodeCallRequest(body []byte, region string) (*calls.Request, []ValidationItem) {
	return decodeCreateCall(body, region)
}
