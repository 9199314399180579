package tts

import (
	"encoding/json"
	"slices"
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

func TestPlaceholders(t *testing.T) {
	got := Placeholders("Hi {{name}}, {{ when }} at {{place}}; see you {{when}}. {{ not a name }}")
	if want := []string{"name", "when", "place"}; !slices.Equal(got, want) {
		t.Errorf("Placeholders = %q, want %q", got, want)
	}
	if got := Placeholders("no placeholders"); len(got) != 0 {
		t.Errorf("Placeholders of plain text = %q", got)
	}
}
