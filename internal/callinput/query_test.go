package callinput

import (
	"fmt"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/history"
)

func TestDecodeQuery(t *testing.T) {
	after := history.Key{CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), CallID: "call_4a35433fba4ee9a8dde28705f8a6f374"}
	cursor := calls.EncodeCursor(after)
	tests := []struct {
		query    string
		want     history.CallQuery
		wantErrs []string // "type@loc"
	}{
		{query: "", want: history.CallQuery{Limit: DefaultPageSize}},
		{query: "limit=1000&cursor=" + cursor + "&status=ended&disposition=answered&source=api&agent_id=" + testAgent +
			"&to_number=(415)+555-1234&created_after=2026-01-31T09:00:00Z&created_before=2026-02-01T09:00:00.5Z",
			want: history.CallQuery{Limit: MaxPageSize, After: &after, Status: "ended", Disposition: "answered", Source: "api",
				AgentID: "7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f", ToNumber: "+14155551234",
				CreatedAfter:  time.Date(2026, 1, 31, 9, 0, 0, 0, time.UTC),
				CreatedBefore: time.Date(2026, 2, 1, 9, 0, 0, 5e8, time.UTC)}},
		{query: "limit=1001", wantErrs: []string{"less_than_equal@[query limit]"}},
		{query: "cursor=we_0123", wantErrs: []string{"string_pattern_mismatch@[query cursor]"}},
		{query: "status=done&disposition=&source=kubectl%20", wantErrs: []string{"enum@[query status]",
			"enum@[query disposition]", "enum@[query source]"}},
		{query: "agent_id=7f2c1e9a3b4d4c5e8f601a2b3c4d5e6f&to_number=-14155550123&created_after=2026-01-31",
			wantErrs: []string{"uuid_parsing@[query agent_id]", "value_error@[query to_number]",
				"datetime_from_date_parsing@[query created_after]"}},
	}
	for _, tt := range tests {
		v, err := url.ParseQuery(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		q, errs := DecodeQuery(v, "US")
		var got []string
		for _, e := range errs {
			got = append(got, fmt.Sprintf("%s@%v", e.Type, e.Loc))
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.wantErrs) {
			t.Errorf("%q: errors = %v, want %v", tt.query, got, tt.wantErrs)
			continue
		}
		if errs == nil && !reflect.DeepEqual(q, tt.want) {
			t.Errorf("%q: got %+v, want %+v", tt.query, q, tt.want)
		}
	}
}
