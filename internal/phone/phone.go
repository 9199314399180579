// Package phone is Switchboard's one reading of phone numbers: what a
// number may be written as and its E.164 form (the REST API, the dashboard
// and campaign contacts parse with it), and the time zones of the people who
// answer them (github.com/nyaruka/phonenumbers' table of prefixes), in which
// campaigns evaluate calling windows and scripts read the dates callees say.
package phone

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

// Normalize validates a number written as phoneSyntax allows with
// libphonenumber's rules and returns it in E.164. A number without "+" is
// read in region.
func Normalize(s, region string) (string, bool) {
	_, e164, ok := Parse(s, region)
	return e164, ok
}

// Parse is Normalize that also returns the parsed number, for a
// caller that asks more of it (its time zones) without parsing it again.
func Parse(s, region string) (*phonenumbers.PhoneNumber, string, bool) {
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

// Invalid is the validation message of a field holding a number Normalize
// refuses.
func Invalid(field string) string {
	return "Value error, " + field + " is not a valid phone number; use E.164, for example +14155551234"
}
