package callinput

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeCustomSIPHeaders(t *testing.T) {
	many := make([]string, 17)
	for i := range many {
		many[i] = fmt.Sprintf(`"X-H%d":"v"`, i)
	}
	for _, tc := range []struct {
		name     string
		field    string
		want     map[string]string
		wantErrs []string // itemKey of each item, in order
	}{
		{name: "absent", field: ""},
		{name: "null", field: `"custom_sip_headers":null`},
		{name: "empty", field: `"custom_sip_headers":{}`},
		{name: "valid", field: `"custom_sip_headers":{"X-Account":"acme-42","x-campaign-id":"spring sale ~!"}`,
			want: map[string]string{"X-Account": "acme-42", "x-campaign-id": "spring sale ~!"}},
		{name: "not an object", field: `"custom_sip_headers":["X-A"]`, wantErrs: []string{"dict_type@custom_sip_headers"}},
		{name: "too many", field: `"custom_sip_headers":{` + strings.Join(many, ",") + `}`,
			wantErrs: []string{"too_long@custom_sip_headers"}},
		{name: "routing header", field: `"custom_sip_headers":{"Route":"<sip:evil>","P-Asserted-Identity":"x"}`,
			wantErrs: []string{"value_error@custom_sip_headers.P-Asserted-Identity", "value_error@custom_sip_headers.Route"}},
		{name: "reserved", field: `"custom_sip_headers":{"x-switchboard-call-id":"spoof"}`,
			wantErrs: []string{"value_error@custom_sip_headers.x-switchboard-call-id"}},
		{name: "twice in two cases", field: `"custom_sip_headers":{"X-A":"1","x-a":"2"}`,
			wantErrs: []string{"value_error@custom_sip_headers.x-a"}},
		{name: "name too long", field: `"custom_sip_headers":{"X-` + strings.Repeat("a", 63) + `":"v"}`,
			wantErrs: []string{"value_error@custom_sip_headers.X-" + strings.Repeat("a", 63)}},
		{name: "line break", field: `"custom_sip_headers":{"X-A":"v\r\nVia: forged"}`,
			wantErrs: []string{"string_pattern_mismatch@custom_sip_headers.X-A"}},
		{name: "not ASCII", field: `"custom_sip_headers":{"X-A":"caf\u00e9"}`,
			wantErrs: []string{"string_pattern_mismatch@custom_sip_headers.X-A"}},
		{name: "too long", field: `"custom_sip_headers":{"X-A":"` + strings.Repeat("v", 257) + `"}`,
			wantErrs: []string{"string_too_long@custom_sip_headers.X-A"}},
		{name: "not a string", field: `"custom_sip_headers":{"X-A":42}`,
			wantErrs: []string{"string_type@custom_sip_headers.X-A"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, items := DecodeRequest([]byte(callBody(tc.field)), "US")
			var got []string
			for _, it := range items {
				got = append(got, itemKey(it))
			}
			if !reflect.DeepEqual(got, tc.wantErrs) {
				t.Fatalf("problems %v, want %v (%+v)", got, tc.wantErrs, items)
			}
			if req != nil && !reflect.DeepEqual(req.SIPHeaders, tc.want) {
				t.Errorf("headers %v, want %v", req.SIPHeaders, tc.want)
			}
		})
	}
}
