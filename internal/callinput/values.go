package callinput

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// A call's variables and metadata are checked here, for POST /v1/calls and
// the dashboard's call form (DecodeRequest) and for a campaign's contacts,
// so that a contact is refused at upload with the words a call would get,
// instead of being accepted and then failing, or retried, at dial time.

// VariablesProblems checks a variables object (compact JSON, nil when
// absent) at loc: an object (checkJSON's duplicate keys, huge numbers and
// nesting), at most MaxVariables, each name 1 to MaxVariableNameChars
// characters, each value at most MaxVariableValueBytes.
func VariablesProblems(raw json.RawMessage, loc []any) []validation.Item {
	values, items := objectOf(raw, loc)
	if values == nil {
		return items
	}
	if len(values) > MaxVariables {
		return []validation.Item{TooManyVariables(loc, len(values), validation.Input(raw))}
	}
	for _, key := range slices.Sorted(maps.Keys(values)) {
		items = append(items, variableProblems(append(slices.Clone(loc), key), key, values[key])...)
	}
	return items
}

// MetadataProblems checks a metadata object (compact JSON, nil when
// absent) at loc: an object as checkJSON wants it, at most MaxMetadataBytes.
func MetadataProblems(raw json.RawMessage, loc []any) []validation.Item {
	values, items := objectOf(raw, loc)
	if values == nil {
		return items
	}
	if len(raw) > MaxMetadataBytes {
		return []validation.Item{{Type: "too_long", Loc: loc,
			Msg:   fmt.Sprintf("Metadata should have at most %d bytes as compact JSON, not %d", MaxMetadataBytes, len(raw)),
			Input: validation.Input(raw), Ctx: map[string]any{"max_length": MaxMetadataBytes, "actual_length": len(raw)}}}
	}
	return nil
}

// objectOf decodes raw as a JSON object: nil and no problem when absent,
// nil and the problem when it is not an object or fails checkJSON.
func objectOf(raw json.RawMessage, loc []any) (map[string]json.RawMessage, []validation.Item) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var values map[string]json.RawMessage
	if err := json.Unmarshal(raw, &values); err != nil || values == nil {
		return nil, []validation.Item{{Type: "dict_type", Loc: loc, Msg: "Input should be a valid dictionary",
			Input: validation.Input(raw)}}
	}
	if item := checkJSON(raw, loc); item != nil {
		return nil, []validation.Item{*item}
	}
	return values, nil
}

// TooManyVariables is the problem of n variables, over MaxVariables.
func TooManyVariables(loc []any, n int, input any) validation.Item {
	return validation.Item{Type: "too_long", Loc: loc,
		Msg:   fmt.Sprintf("Variables should have at most %d entries, not %d", MaxVariables, n),
		Input: input, Ctx: map[string]any{"max_length": MaxVariables, "actual_length": n}}
}

// VariableNameProblem is what is wrong with a variable's name, or nil.
func VariableNameProblem(loc []any, name string) *validation.Item {
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		return &validation.Item{Type: "string_too_short", Loc: loc, Msg: "Variable names should have at least 1 character",
			Input: name, Ctx: map[string]any{"min_length": 1}}
	case n > MaxVariableNameChars:
		return &validation.Item{Type: "string_too_long", Loc: loc,
			Msg:   fmt.Sprintf("Variable names should have at most %d characters", MaxVariableNameChars),
			Input: name, Ctx: map[string]any{"max_length": MaxVariableNameChars}}
	}
	return nil
}

// VariableValueProblem is what is wrong with a variable's value (JSON),
// or nil.
func VariableValueProblem(loc []any, value json.RawMessage) *validation.Item {
	n := callpolicy.ValueBytes(value)
	if n <= MaxVariableValueBytes {
		return nil
	}
	var s string
	if json.Unmarshal(value, &s) == nil {
		return &validation.Item{Type: "string_too_long", Loc: loc,
			Msg:   fmt.Sprintf("Variable values should have at most %d bytes, not %d", MaxVariableValueBytes, n),
			Input: s, Ctx: map[string]any{"max_length": MaxVariableValueBytes}}
	}
	return &validation.Item{Type: "too_long", Loc: loc,
		Msg:   fmt.Sprintf("Variable values should have at most %d bytes as JSON, not %d", MaxVariableValueBytes, n),
		Input: validation.Input(value), Ctx: map[string]any{"max_length": MaxVariableValueBytes}}
}

// variableProblems are the problems of one variable, its name's first.
func variableProblems(loc []any, name string, value json.RawMessage) []validation.Item {
	var items []validation.Item
	for _, item := range []*validation.Item{VariableNameProblem(loc, name), VariableValueProblem(loc, value)} {
		if item != nil {
			items = append(items, *item)
		}
	}
	return items
}
