// Package validation is the shape of a request's validation problems,
// pydantic's (a FastAPI 422's `{"detail": [{type, loc, msg, input}]}`),
// and the checks that every decoder of a request shares: a JSON object
// body, the limit and cursor of a list. Whoever decodes a request (the
// REST API, the dashboard's forms) reports problems in this one shape, so
// a form and an API call are refused with the same words.
package validation

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Item is one problem: its kind (pydantic's type), where it is (loc, such
// as ["body", "to_number"] or ["query", "limit"]), what is wrong (msg),
// the value found there (input) and the bound it broke (ctx).
type Item struct {
	Type  string         `json:"type"`
	Loc   []any          `json:"loc"`
	Msg   string         `json:"msg"`
	Input any            `json:"input"`
	Ctx   map[string]any `json:"ctx,omitempty"`
}

// Problems collects every problem of a request, as a 422 reports them
// all rather than the first.
type Problems []Item

// Add records item.
func (p *Problems) Add(item Item) { *p = append(*p, item) }

// Fail records a problem of type typ at loc.
func (p *Problems) Fail(typ string, loc []any, msg string, input any, ctx map[string]any) {
	p.Add(Item{Type: typ, Loc: loc, Msg: msg, Input: input, Ctx: ctx})
}

// NotOneOf records that input at loc is none of allowed (pydantic's enum
// problem, the allowed values in its ctx).
func (p *Problems) NotOneOf(loc []any, input string, allowed []string) {
	expected := Expected(allowed)
	p.Fail("enum", loc, "Input should be "+expected, input, map[string]any{"expected": expected})
}

// Input is raw JSON as an item's input. Numbers keep their text; one
// beyond a float64 is echoed as a string, which every client can decode.
func Input(raw []byte) any {
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

// Expected is pydantic's wording of an enum's values: 'a', 'b' or 'c'.
func Expected(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = "'" + v + "'"
	}
	if len(quoted) < 2 {
		return strings.Join(quoted, "")
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}
