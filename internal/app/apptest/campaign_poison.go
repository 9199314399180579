package apptest

// Contacts that cannot be called are refused at upload, in the words of
// POST /v1/calls, and those the apiserver refuses later end at once:
// a file shaped to grow in memory, a contact of 301 variables, a CSV
// without the column of a variable the agent requires, a contact stored
// before those checks whose Call is invalid, and a Campaign applied with
// kubectl that names an agent the organization does not have.

import (
	"fmt"
	"strings"
)

// ManyVariables is n variables, customer_name among them.
func ManyVariables(n int) map[string]any {
	vars := map[string]any{"customer_name": "Ada"}
	for i := len(vars); i < n; i++ {
		vars[fmt.Sprintf("v%03d", i)] = "x"
	}
	return vars
}

// AmplifyingCSV is 100 column names of 1,000 characters over 1,000 rows
// of empty fields: 213 KB that took 216 MB of the operator's memory.
func AmplifyingCSV() string {
	var b strings.Builder
	b.WriteString("to_number")
	for i := range 100 {
		fmt.Fprintf(&b, ",%03d%s", i, strings.Repeat("x", 997))
	}
	b.WriteString("\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "+1212555%04d%s\n", i, strings.Repeat(",", 100))
	}
	return b.String()
}
