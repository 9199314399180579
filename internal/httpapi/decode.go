package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/google/uuid"
	"github.com/nyaruka/phonenumbers"
)

// MaxBodyBytes bounds a create-call request: variables and metadata are
// stored in the Call resource, and etcd holds objects of about 1.5 MiB.
const MaxBodyBytes = 64 << 10

// Field names and the aliases accepted for them, first match wins. The
// variables aliases let requests written for the third-party create-call
// endpoint work unchanged.
var (
	agentIDNames   = []string{"agent_id", "override_agent_id"}
	variablesNames = []string{"variables", "partner_llm_dynamic_variables", "retell_llm_dynamic_variables"}
)

// createCallRequest is a decoded, validated POST /v1/calls body.
type createCallRequest struct {
	AgentID    string          // canonical lowercase UUID
	ToNumber   string          // E.164
	FromNumber string          // E.164 or empty
	Variables  map[string]any  // never nil
	RawVars    json.RawMessage // as sent, stored untouched
	Metadata   json.RawMessage // as sent, stored untouched; nil when absent
}

// decoder collects every validation problem, as the 422 array reports all.
type decoder struct {
	fields map[string]json.RawMessage
	errs   []ValidationItem
	region string
}

// readBody reads at most MaxBodyBytes; a longer body is a validation error.
func readBody(r *http.Request) ([]byte, *ValidationItem) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, &ValidationItem{Type: "body_read_error", Loc: []any{"body"},
			Msg: "The request body could not be read.", Input: nil}
	}
	if len(body) > MaxBodyBytes {
		return nil, &ValidationItem{Type: "too_long", Loc: []any{"body"},
			Msg:   fmt.Sprintf("Request body should have at most %d bytes.", MaxBodyBytes),
			Input: nil, Ctx: map[string]any{"max_length": MaxBodyBytes}}
	}
	return body, nil
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
	req.Metadata = d.object([]string{"metadata"})
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return req, nil
}

func (d *decoder) parseObject(body []byte) []ValidationItem {
	if len(bytes.TrimSpace(body)) == 0 {
		return []ValidationItem{{Type: "missing", Loc: []any{"body"}, Msg: "Field required", Input: nil}}
	}
	// One parse on the hot path; the error path re-reads the body to
	// tell malformed JSON from JSON that is not an object.
	err := json.Unmarshal(body, &d.fields)
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		var top any
		_ = json.Unmarshal(body, &top)
		return []ValidationItem{{Type: "model_attributes_type", Loc: []any{"body"},
			Msg: "Input should be a valid dictionary or object to extract fields from", Input: top}}
	case err != nil:
		return []ValidationItem{jsonInvalid(err)}
	case d.fields == nil: // the body is null
		return []ValidationItem{{Type: "missing", Loc: []any{"body"}, Msg: "Field required", Input: nil}}
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
	var in any
	if input != nil {
		_ = json.Unmarshal(input, &in)
	}
	d.errs = append(d.errs, ValidationItem{Type: typ, Loc: []any{"body", field}, Msg: msg, Input: in})
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

// phoneChars are the characters a dialable number may be written with.
// Letters are refused rather than read as a keypad (1-800-FLOWERS): a typo
// must not place a call to someone else. So are extensions, which a
// carrier cannot dial.
var phoneChars = regexp.MustCompile(`^\+?[0-9 ().-]+$`)

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

// normalizePhone validates a number with libphonenumber's rules and returns
// it in E.164.
func normalizePhone(s, region string) (string, bool) {
	num, err := phonenumbers.Parse(s, region)
	if err != nil || !phoneChars.MatchString(strings.TrimSpace(s)) || num.GetExtension() != "" ||
		!phonenumbers.IsValidNumber(num) {
		return "", false
	}
	return phonenumbers.Format(num, phonenumbers.E164), true
}

func (d *decoder) variables() (json.RawMessage, map[string]any) {
	raw := d.object(variablesNames)
	vars := map[string]any{}
	if raw != nil {
		_ = json.Unmarshal(raw, &vars) // object() checked it is an object
	}
	return raw, vars
}

// object decodes an optional JSON object field; null counts as absent.
func (d *decoder) object(names []string) json.RawMessage {
	name, raw, present := d.lookup(names)
	if !present {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		d.fail("dict_type", name, "Input should be a valid dictionary", raw)
		return nil
	}
	return raw
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
