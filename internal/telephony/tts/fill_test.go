package tts

import (
	"encoding/json"
	"testing"
)

func TestFill(t *testing.T) {
	vars := map[string]any{
		"customer_name": "Ada",
		"party_size":    float64(4), // as decoded from JSON
		"balance":       12.5,
		"big":           float64(1234567),
		"count":         3,
		"confirmed":     true,
		"nothing":       nil,
		"raw":           json.Number("42"),
	}
	for _, tc := range []struct{ text, want string }{
		{"Hello {{customer_name}}.", "Hello Ada."},
		{"Hello {{ customer_name }}.", "Hello Ada."},
		{"Hello {{\tcustomer_name\n}}.", "Hello Ada."},
		{"A table for {{party_size}}, {{balance}} due.", "A table for 4, 12.5 due."},
		{"{{big}} {{count}} {{raw}}", "1234567 3 42"},
		{"Confirmed: {{confirmed}}.", "Confirmed: true."},
		{"Hello {{missing}}!", "Hello !"},
		{"Hello {{nothing}}!", "Hello !"},
		{"{{customer_name}}{{customer_name}}", "AdaAda"},
		// Not placeholders: left as written.
		{"{{ not a name }} {single} {{}} {{1st}}", "{{ not a name }} {single} {{}} {{1st}}"},
		{"no placeholders", "no placeholders"},
	} {
		if got := Fill(tc.text, vars); got != tc.want {
			t.Errorf("Fill(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}
