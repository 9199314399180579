package callinput

import (
	"regexp"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// phoneSyntax is how a dialable number may be written: an optional leading
// "+", then groups of digits, a group possibly in parentheses, separated by
// spaces and at most one "-" or "." between two groups:
// "+1 (415) 555-1234", "415.555.1234", "+44 (0)20 7183 8750". Anything else
// is refused rather than guessed at, because a misread number calls
// someone else: a "-" or "." before the first digit (-14155550123 is not
// +14155550123), a separator at the end, doubled separators, a "+" or
// parenthesis out of place, letters (1-800-FLOWERS is not read as a
// keypad), extensions (a carrier cannot dial them) and any other symbol.
var phoneSyntax = regexp.MustCompile(`^(\+ *)?(\([0-9]+\)|[0-9]+)( *[-.]? *(\([0-9]+\)|[0-9]+))*$`)

// e164Syntax is the Call resource's pattern for numbers (api/v1alpha1): a
// number libphonenumber accepts but the apiserver would refuse must be a
// 422 here, not a failed create.
var e164Syntax = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// NormalizePhone validates a number written as phoneSyntax allows with
// libphonenumber's rules and returns it in E.164. A number without "+" is
// read in region.
func NormalizePhone(s, region string) (string, bool) {
	_, e164, ok := ParsePhone(s, region)
	return e164, ok
}

// ParsePhone is NormalizePhone that also returns the parsed number, for a
// caller that asks more of it (its time zones) without parsing it again.
func ParsePhone(s, region string) (*phonenumbers.PhoneNumber, string, bool) {
	if !phoneSyntax.MatchString(strings.TrimSpace(s)) {
		return nil, "", false
	}
	num, err := phonenumbers.Parse(s, region)
	if err != nil || num.GetExtension() != "" || !phonenumbers.IsValidNumber(num) {
		return nil, "", false
	}
	e164 := phonenumbers.Format(num, phonenumbers.E164)
	return num, e164, e164Syntax.MatchString(e164)
}

// PhoneError is the message of a field holding a number NormalizePhone
// refuses.
func PhoneError(field string) string {
	return "Value error, " + field + " is not a valid phone number; use E.164, for example +14155551234"
}
