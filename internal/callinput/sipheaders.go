package callinput

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// sipHeadersField is the create-call field of custom SIP headers (the
// third-party API's name for them).
const sipHeadersField = "custom_sip_headers"

var sipHeaderName = regexp.MustCompile(switchboardv1.SIPHeaderNamePattern)

// sipHeaders decodes custom_sip_headers, an object of X- header names to
// string values, under the rules the Call's spec.sipHeaders has: the
// name X- and up to 62 letters, digits and hyphens, not X-Switchboard-*
// (ours), the value printable ASCII up to 256 characters (a line break
// would forge headers), 16 at most. Nil when absent or invalid.
func (d *decoder) sipHeaders() map[string]string {
	_, raw, present := d.lookup([]string{sipHeadersField})
	if !present {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		d.FailField("dict_type", sipHeadersField, "Input should be a valid dictionary", raw)
		return nil
	}
	if n, limit := len(fields), switchboardv1.SIPHeadersMaxCount; n > limit {
		d.Fail("too_long", []any{"body", sipHeadersField},
			fmt.Sprintf("Dictionary should have at most %d items after validation, not %d", limit, n),
			nil, map[string]any{"field_type": "Dictionary", "max_length": limit, "actual_length": n})
		return nil
	}
	before := len(d.Problems)
	headers := make(map[string]string, len(fields))
	seen := make(map[string]bool, len(fields))
	// In name order, so that the problems come in the same order each time.
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if value, ok := d.sipHeader(name, fields[name], seen); ok {
			headers[name] = value
		}
	}
	if len(d.Problems) > before || len(headers) == 0 {
		return nil
	}
	return headers
}

// sipHeader checks one custom header; seen holds the lowercase names
// before it (SIP header names are case-insensitive).
func (d *decoder) sipHeader(name string, raw json.RawMessage, seen map[string]bool) (string, bool) {
	loc := []any{"body", sipHeadersField, name}
	lower := strings.ToLower(name)
	switch {
	case !sipHeaderName.MatchString(name):
		d.Fail("value_error", loc, "Value error, a custom SIP header's name is X- followed by up to 62 letters, digits and hyphens",
			name, nil)
		return "", false
	case strings.HasPrefix(lower, switchboardv1.SIPHeaderReservedPrefix):
		d.Fail("value_error", loc, "Value error, X-Switchboard-* headers are Switchboard's own", name, nil)
		return "", false
	case seen[lower]:
		d.Fail("value_error", loc, "Value error, this header is given twice (SIP header names are case-insensitive)", name, nil)
		return "", false
	}
	seen[lower] = true
	var value string
	if err := json.Unmarshal(raw, &value); err != nil {
		d.Fail("string_type", loc, "Input should be a valid string", validation.Input(raw), nil)
		return "", false
	}
	if limit := switchboardv1.SIPHeaderValueMaxLength; len(value) > limit {
		d.Fail("string_too_long", loc, fmt.Sprintf("String should have at most %d characters", limit), value,
			map[string]any{"max_length": limit})
		return "", false
	}
	for i := range len(value) {
		if value[i] < ' ' || value[i] > '~' {
			d.Fail("string_pattern_mismatch", loc,
				"String should be printable ASCII (no line breaks or other control characters)", value,
				map[string]any{"pattern": switchboardv1.SIPHeaderValuePattern})
			return "", false
		}
	}
	return value, true
}
