package phone

import (
	"regexp"
	"strings"
	"testing"
)

// callNumber is the Call resource's pattern for numbers (api/v1alpha1),
// written out again so the fuzz test does not trust the code it checks.
var callNumber = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

func TestNormalize(t *testing.T) {
	accepted := map[string]string{
		"+14155551234":        "+14155551234",
		" +14155551234 ":      "+14155551234",
		"4155551234":          "+14155551234",
		"(415) 555-1234":      "+14155551234",
		"(415)555-1234":       "+14155551234",
		"415-555-1234":        "+14155551234",
		"415.555.1234":        "+14155551234",
		"415 - 555 - 1234":    "+14155551234",
		"1 (415) 555-1234":    "+14155551234",
		"1-415-555-1234":      "+14155551234",
		"+1 (415) 555-1234":   "+14155551234",
		"+1.415.555.1234":     "+14155551234",
		"+ 1 415 555 1234":    "+14155551234",
		"+44 (0)20 7183 8750": "+442071838750",
		"011 44 20 7183 8750": "+442071838750", // the US international prefix
	}
	for in, want := range accepted {
		if got, ok := Normalize(in, "US"); !ok || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{
		"", " ", "hello", "+1415555",
		"-14155550123", "- 4155551234", ".4155551234", // a sign or separator before the first digit
		"4155551234-", "4155551234.", "(415) 555-1234 -", // ... or after the last
		"415--555-1234", "415..555.1234", "415-.555-1234", // doubled separators
		"++14155551234", "+1+4155551234", "14155551234+", // "+" anywhere but once, first
		"((415)) 555 1234", "(415 555 1234", "415) 555 1234", "()4155551234", "(4-15) 555 1234", // parentheses out of place
		"1-800-FLOWERS", "+1 415 CALL NOW", "+14155551234 ext. 55", "+14155551234;ext=5", "+1 415 555 1234 x5", // letters, extensions
		"4155551234#", "*4155551234", "415/555/1234", "415_555_1234", "415,555,1234", "tel:+14155551234", // other symbols
		"+1\t415 555 1234", "+1\u00a0415 555 1234", "＋14155551234", "٤١٥٥٥٥١٢٣٤", // other spaces, other digits
		"+4930123456789012", "+49 30 1234567890123", // more than the 15 digits of E.164
	} {
		if got, ok := Normalize(in, "US"); ok {
			t.Errorf("Normalize(%q) = %q, want refused", in, got)
		}
	}
}

// FuzzNormalize: an accepted number is E.164 as the Call resource
// holds it, was written as phoneSyntax allows, and reads as itself.
func FuzzNormalize(f *testing.F) {
	for _, seed := range []string{"+14155551234", "(415) 555-1234", "415.555.1234", "-14155550123", "+44 (0)20 7183 8750",
		"011 44 20 7183 8750", "+4930123456789012", "1-800-FLOWERS", "+1 415 555 1234 x5", "٤١٥٥٥٥١٢٣٤"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e164, ok := Normalize(s, "US")
		if !ok {
			return
		}
		if !callNumber.MatchString(e164) || !phoneSyntax.MatchString(strings.TrimSpace(s)) {
			t.Fatalf("Normalize(%q) accepted %q", s, e164)
		}
		if again, ok := Normalize(e164, "US"); !ok || again != e164 {
			t.Fatalf("Normalize(%q) = %q, but %q reads as %q, %v", s, e164, e164, again, ok)
		}
	})
}
