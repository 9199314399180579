package callpolicy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestCheckSize(t *testing.T) {
	manyVars := func(n int) json.RawMessage {
		vars := map[string]int{}
		for i := range n {
			vars[fmt.Sprint("v", i)] = i
		}
		raw, _ := json.Marshal(vars)
		return raw
	}
	str := func(n int) json.RawMessage {
		return json.RawMessage(`{"v":"` + strings.Repeat("é", n/2) + strings.Repeat("x", n%2) + `"}`)
	}
	for _, tc := range []struct {
		name                string
		variables, metadata json.RawMessage
		tooLarge            bool
	}{
		{"nothing", nil, nil, false},
		{"metadata at the limit", nil, json.RawMessage(`{"s":"` + strings.Repeat("x", MaxMetadataBytes-8) + `"}`), false},
		{"metadata over the limit", nil, json.RawMessage(`{"s":"` + strings.Repeat("x", MaxMetadataBytes-7) + `"}`), true},
		{"as many variables as allowed", manyVars(MaxVariables), nil, false},
		{"one variable too many", manyVars(MaxVariables + 1), nil, true},
		{"a value of 1 KiB in UTF-8", str(MaxVariableValueBytes), nil, false},
		{"a value one byte over", str(MaxVariableValueBytes + 1), nil, true},
		{"a non-string value over, as JSON", json.RawMessage(`{"v":[` + strings.Repeat("1,", MaxVariableValueBytes/2) + `1]}`), nil, true},
		{"a name too long", json.RawMessage(`{"` + strings.Repeat("n", MaxVariableNameChars+1) + `":1}`), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rej := CheckSize(tc.variables, tc.metadata)
			if (rej != nil) != tc.tooLarge {
				t.Fatalf("CheckSize = %+v, want too large: %v", rej, tc.tooLarge)
			}
			if rej != nil && rej.Code != CodeCallTooLarge {
				t.Errorf("code = %q, want %q", rej.Code, CodeCallTooLarge)
			}
		})
	}
}
