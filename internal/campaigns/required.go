package campaigns

import (
	"encoding/json"
	"slices"

	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// MissingRequired refuses, at upload, the contacts that lack a variable
// the agent requires: their calls would be refused with
// missing_variables, one by one, when dialed. A variable no contact has (a
// CSV without its column) is one problem for the list, not one per row;
// otherwise each contact lacking one is a problem, in callpolicy's words.
func MissingRequired(required []string, in []ContactInput) []Invalid {
	if len(required) == 0 || len(in) == 0 {
		return nil
	}
	lacking := make([][]string, len(in))
	lackedBy := map[string]int{}
	for i, c := range in {
		vars := map[string]any{}
		_ = json.Unmarshal(c.Variables, &vars) // checked as an object, or absent
		lacking[i] = callpolicy.MissingVariables(required, vars)
		for _, name := range lacking[i] {
			lackedBy[name]++
		}
	}
	var absent []string
	for name, n := range lackedBy {
		if n == len(in) {
			absent = append(absent, name)
		}
	}
	if len(absent) > 0 {
		slices.Sort(absent)
		return []Invalid{{Index: -1, Item: missingItem(absent,
			" No contact has them: add a column (in a CSV) or a variable (in JSON) for each.")}}
	}
	var bad []Invalid
	for i, missing := range lacking {
		if len(missing) > 0 && len(bad) < maxInvalid {
			bad = append(bad, Invalid{Index: i, Line: in[i].Line, Item: missingItem(missing, "")})
		}
	}
	return bad
}

func missingItem(missing []string, more string) validation.Item {
	return validation.Item{Type: callpolicy.CodeMissingVariables, Loc: []any{"variables"},
		Msg: callpolicy.MissingVariablesMessage(missing) + more, Input: nil,
		Ctx: map[string]any{"missing_variables": missing}}
}
