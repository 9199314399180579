// Package callinput decodes and validates what a caller asks of calls: a
// create-call body into a calls.Request, a list's filters into a
// history.CallQuery. The REST API and the dashboard's forms both decode
// with it, so a call is accepted or refused, with the same messages,
// whichever way it is asked for. Reading requests and writing responses
// is theirs; problems are reported as validation items.
package callinput

import (
	"bytes"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/phone"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// Limits of a create-call request (api/README.md, "Limits"). Variables and
// metadata are bounded by callpolicy's size limits, which Calls applied
// with kubectl meet too; the REST API's body limit (64 KiB) binds before
// they add up: 100 variables of 1 KiB do not fit in 64 KiB.
const (
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
// aliases let requests written for the third-party create-call endpoint
// work unchanged.
var (
	agentIDNames   = []string{"agent_id", "override_agent_id"}
	variablesNames = []string{"variables", "partner_llm_dynamic_variables", "retell_llm_dynamic_variables"}
)

// decoder decodes one create-call body, collecting every problem.
type decoder struct {
	*validation.Object
	// region is where a number written without "+" is read.
	region string
}

// DecodeRequest decodes and validates a create-call body (POST /v1/calls,
// the dashboard's form): agent_id or its alias a UUID, the numbers valid
// and made E.164 (one without "+" read in region), variables and metadata
// objects within the limits above, custom_sip_headers as sipHeaders says. It returns the request or, if anything
// is wrong, every problem and no request.
func DecodeRequest(body []byte, region string) (*calls.Request, []validation.Item) {
	obj, invalid := validation.ParseObject(body)
	if invalid != nil {
		return nil, invalid
	}
	d := &decoder{Object: obj, region: region}
	req := &calls.Request{
		AgentID:    d.agentID(),
		ToNumber:   d.phone("to_number", true),
		FromNumber: d.phone("from_number", false),
	}
	req.RawVars, req.Variables = d.variables()
	req.Metadata = d.metadata()
	req.SIPHeaders = d.sipHeaders()
	if len(d.Problems) > 0 {
		return nil, d.Problems
	}
	return req, nil
}

// lookup returns the first field among names (aliases) that holds a value;
// null counts as absent, so `"variables": null` does not hide an alias.
func (d *decoder) lookup(names []string) (string, json.RawMessage, bool) {
	for _, n := range names {
		if raw, ok := d.Fields[n]; ok && string(raw) != "null" {
			return n, raw, true
		}
	}
	return names[0], nil, false
}

// str decodes a string field; ok is false when absent, null or invalid.
func (d *decoder) str(names []string, required bool) (name, value string, ok bool) {
	name, raw, present := d.lookup(names)
	if !present {
		if required {
			d.FailField("missing", name, "Field required", nil)
		}
		return name, "", false
	}
	if err := json.Unmarshal(raw, &value); err != nil {
		d.FailField("string_type", name, "Input should be a valid string", raw)
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
		d.FailField("uuid_parsing", name, "Input should be a valid UUID", mustJSON(s))
		return ""
	}
	return id.String()
}

// phone validates a number with phone.Normalize and returns it in E.164.
func (d *decoder) phone(field string, required bool) string {
	name, s, ok := d.str([]string{field}, required)
	if !ok {
		return ""
	}
	e164, ok := phone.Normalize(s, d.region)
	if !ok {
		d.FailField("value_error", name, phone.Invalid(name), mustJSON(s))
	}
	return e164
}

// variables decodes the variables object, checked by VariablesProblems.
func (d *decoder) variables() (json.RawMessage, map[string]any) {
	vars := map[string]any{}
	name, raw := d.object(variablesNames)
	if raw == nil {
		return nil, vars
	}
	if items := VariablesProblems(raw, []any{"body", name}); len(items) > 0 {
		d.Problems = append(d.Problems, items...)
		return nil, vars
	}
	_ = json.Unmarshal(raw, &vars) // checkJSON saw every number fit a float64
	return raw, vars
}

// metadata decodes the metadata object, checked by MetadataProblems.
func (d *decoder) metadata() json.RawMessage {
	name, raw := d.object([]string{"metadata"})
	if items := MetadataProblems(raw, []any{"body", name}); len(items) > 0 {
		d.Problems = append(d.Problems, items...)
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
		d.FailField("dict_type", name, "Input should be a valid dictionary", raw)
		return name, nil
	}
	if item := checkJSON(raw, []any{"body", name}); item != nil {
		d.Add(*item)
		return name, nil
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, raw) // raw is valid JSON
	return name, compact.Bytes()
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
