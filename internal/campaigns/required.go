package campaigns

import (
	"encoding/json"
	"slices"

	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// MissingRequired refuses, at upload, a list of contacts none of which has
// a variable the agent requires (a CSV without its column): every call
// would be refused with missing_variables when dialed. It is one problem
// for the list, in callpolicy's words. A contact of a list that has the
// variable but leaves it blank is not refused here: it may repeat a number
// the list or the campaign holds already, and then is never dialed; its
// call, if placed, ends missing_variables.
func MissingRequired(required []string, in []ContactInput) []Invalid {
	if len(required) == 0 || len(in) == 0 {
		return nil
	}
	lackedBy := map[string]int{}
	for _, c := range in {
		vars := map[string]any{}
		_ = json.Unmarshal(c.Variables, &vars) // checked as an object, or absent
		for _, name := range callpolicy.MissingVariables(required, vars) {
			lackedBy[name]++
		}
	}
	var absent []string
	for name, n := range lackedBy {
		if n == len(in) {
			absent = append(absent, name)
		}
	}
	if len(absent) == 0 {
		return nil
	}
	slices.Sort(absent)
	return []Invalid{{Index: -1, Item: missingItem(absent,
		" No contact has them: add a column (in a CSV) or a variable (in JSON) for each.")}}
}

func missingItem(missing []string, more string) validation.Item {
	return validation.Item{Type: callpolicy.CodeMissingVariables, Loc: []any{"variables"},
		Msg: callpolicy.MissingVariablesMessage(missing) + more, Input: nil,
		Ctx: map[string]any{"missing_variables": missing}}
}
