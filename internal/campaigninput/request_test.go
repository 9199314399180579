package campaigninput_test

import (
	"bytes"
	"errors"
	"fmt"
	"mime/multipart"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/campaigninput"
	"github.com/switchboard-dev/switchboard/internal/campaigns"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// problem is what a test expects of one validation item: its type, where
// it points, and the start of what it says.
type problem struct {
	typ string
	loc []any
	msg string
}

func (p problem) String() string { return fmt.Sprintf("%s %v %q", p.typ, p.loc, p.msg) }

// expectProblems fails t unless items are want, in order.
func expectProblems(t *testing.T, items []validation.Item, want ...problem) {
	t.Helper()
	if len(items) != len(want) {
		t.Fatalf("%d problems %v; want %d: %v", len(items), items, len(want), want)
	}
	for i, w := range want {
		got := items[i]
		if got.Type != w.typ || fmt.Sprint(got.Loc) != fmt.Sprint(w.loc) || !strings.HasPrefix(got.Msg, w.msg) {
			t.Errorf("problem %d = %s %v %q; want %s", i, got.Type, got.Loc, got.Msg, w)
		}
	}
}

// contacts is a JSON list of n valid contacts.
func contacts(n int) string {
	list := make([]string, n)
	for i := range list {
		list[i] = fmt.Sprintf(`{"to_number":"+1212555%04d"}`, i)
	}
	return "[" + strings.Join(list, ",") + "]"
}

// withContacts is a JSON body of the valid agent, one contact and the
// extra fields given (JSON members, without braces).
func withContacts(extra string) string {
	body := `{"agent_id":"` + agentID + `","contacts":[{"to_number":"+12125550100"}]`
	if extra != "" {
		body += "," + extra
	}
	return body + "}"
}

// A valid JSON request becomes the Campaign's spec with the documented
// defaults, and its contacts keep their variables and metadata compacted.
func TestDecodeJSONValid(t *testing.T) {
	body := `{"agent_id":"` + agentID + `","name":"Spring renewals","contacts":[
		{"to_number":"+12125550100","timezone":"America/New_York","variables":{ "customer_name" : "Ada" },"metadata":{"crm":"42"}},
		{"to_number":"+12125550101"}]}`
	req, items, err := campaigninput.Decode("application/json; charset=utf-8", []byte(body))
	if err != nil || items != nil {
		t.Fatalf("Decode = %v, %v; want a request", items, err)
	}
	if req.Spec.AgentID != agentID || req.Spec.DisplayName != "Spring renewals" {
		t.Errorf("spec = %+v; want the agent and the name sent", req.Spec)
	}
	if req.Spec.Pacing.CallsPerMinute != 60 || req.Spec.Pacing.MaxConcurrent != 10 {
		t.Errorf("pacing = %+v; want the defaults, 60 calls a minute and 10 at once", req.Spec.Pacing)
	}
	if req.Spec.Redial.Busy != nil || req.Spec.CallingWindow.Start != "" {
		t.Errorf("redial %+v, window %+v; want none when not sent", req.Spec.Redial, req.Spec.CallingWindow)
	}
	if len(req.Contacts) != 2 {
		t.Fatalf("%d contacts; want 2", len(req.Contacts))
	}
	first := req.Contacts[0]
	if first.ToNumber != "+12125550100" || first.Timezone != "America/New_York" ||
		string(first.Variables) != `{"customer_name":"Ada"}` || string(first.Metadata) != `{"crm":"42"}` {
		t.Errorf("first contact = %+v; want its number, zone, variables and metadata", first)
	}
	if second := req.Contacts[1]; second.Variables != nil || second.Metadata != nil {
		t.Errorf("second contact = %+v; want no variables or metadata", second)
	}
}

// Each mistake a backend can make in a JSON body is refused with the
// field it names and a message that says what is wanted; every mistake of
// one body is reported at once.
func TestDecodeJSONProblems(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []problem
	}{
		{"empty body", ``, []problem{{"missing", []any{"body"}, "Field required"}}},
		{"null body", `null`, []problem{{"missing", []any{"body"}, "Field required"}}},
		{"malformed", `{"agent_id": "` + agentID + `",`, []problem{{"json_invalid", []any{"body", 52}, "JSON decode error"}}},
		{"not an object", `[1, 2]`, []problem{{"model_attributes_type", []any{"body"}, "Input should be a valid dictionary"}}},
		{"repeated key", `{"agent_id":"` + agentID + `","agent_id":"` + agentID + `","contacts":[]}`,
			[]problem{{"duplicate_key", []any{"body", "agent_id"}, ""}}},
		{"nothing", `{}`, []problem{
			{"missing", []any{"body", "contacts"}, "Field required"},
			{"missing", []any{"body", "agent_id"}, "Field required"}}},
		{"agent not a UUID", `{"agent_id":"sales-bot","contacts":[]}`,
			[]problem{{"uuid_parsing", []any{"body", "agent_id"}, "Input should be a valid UUID"}}},
		{"name too long", withContacts(`"name":"` + strings.Repeat("n", 201) + `"`),
			[]problem{{"string_too_long", []any{"body", "name"}, "String should have at most 200 characters"}}},
		{"contacts not a list", `{"agent_id":"` + agentID + `","contacts":"+12125550100"}`,
			[]problem{{"model_type", []any{"body", "contacts"}, "Input has the wrong shape"}}},
		{"too many contacts", `{"agent_id":"` + agentID + `","contacts":` + contacts(1001) + `}`,
			[]problem{{"too_long", []any{"body", "contacts"}, "List should have at most 1000 items; upload more as a CSV file"}}},
		{"variables not an object", `{"agent_id":"` + agentID + `","contacts":[{"to_number":"+12125550100","variables":["Ada"]}]}`,
			[]problem{{"dict_type", []any{"body", "contacts", 0, "variables"}, "Input should be a valid dictionary"}}},
		{"metadata not an object", `{"agent_id":"` + agentID + `","contacts":[{"to_number":"+12125550100"},{"to_number":"+12125550101","metadata":"x"}]}`,
			[]problem{{"dict_type", []any{"body", "contacts", 1, "metadata"}, "Input should be a valid dictionary"}}},
		{"pacing both rates", withContacts(`"pacing":{"calls_per_second":1,"calls_per_minute":60}`),
			[]problem{{"value_error", []any{"body", "pacing", "calls_per_second"}, "Value error, give calls_per_second or calls_per_minute, not both"}}},
		{"pacing too fast", withContacts(`"pacing":{"calls_per_second":1001}`),
			[]problem{{"value_error", []any{"body", "pacing", "calls_per_second"}, "Value error, calls_per_second must be between 1/60 and 1000"}}},
		{"pacing too slow", withContacts(`"pacing":{"calls_per_second":0.001}`),
			[]problem{{"value_error", []any{"body", "pacing", "calls_per_second"}, "Value error, calls_per_second must be between 1/60 and 1000"}}},
		{"pacing per minute zero", withContacts(`"pacing":{"calls_per_minute":0}`),
			[]problem{{"value_error", []any{"body", "pacing", "calls_per_minute"}, "Value error, calls_per_minute must be between 1 and 60000"}}},
		{"pacing per minute too high", withContacts(`"pacing":{"calls_per_minute":60001}`),
			[]problem{{"value_error", []any{"body", "pacing", "calls_per_minute"}, "Value error, calls_per_minute must be between 1 and 60000"}}},
		{"max concurrent", withContacts(`"pacing":{"max_concurrent":10001}`),
			[]problem{{"value_error", []any{"body", "pacing", "max_concurrent"}, "Value error, max_concurrent must be between 1 and 10000"}}},
		{"pacing a string", withContacts(`"pacing":"fast"`),
			[]problem{{"model_type", []any{"body", "pacing"}, "Input has the wrong shape"}}},
		{"window backwards", withContacts(`"calling_window":{"start":"17:00","end":"09:00"}`),
			[]problem{{"value_error", []any{"body", "calling_window"}, "Value error, calling window start 17:00 is not before its end 09:00"}}},
		{"window not HH:MM", withContacts(`"calling_window":{"start":"9am","end":"17:00"}`),
			[]problem{{"value_error", []any{"body", "calling_window"}, `Value error, time of day "9am" is not HH:MM`}}},
		{"window unknown day", withContacts(`"calling_window":{"start":"09:00","end":"17:00","days":["monday"]}`),
			[]problem{{"value_error", []any{"body", "calling_window"}, `Value error, unknown day "monday": use mon, tue`}}},
		{"start_at not RFC 3339", withContacts(`"calling_window":{"start_at":"tomorrow"}`),
			[]problem{{"datetime_parsing", []any{"body", "calling_window", "start_at"}, "Input should be an RFC 3339 date and time"}}},
		{"end_at before start_at", withContacts(`"calling_window":{"start_at":"2026-06-02T09:00:00Z","end_at":"2026-06-01T09:00:00Z"}`),
			[]problem{{"value_error", []any{"body", "calling_window", "end_at"}, "Value error, end_at must be after start_at"}}},
		{"redial attempts", withContacts(`"redial":{"busy":{"attempts":0},"no_answer":{"attempts":21}}`), []problem{
			{"value_error", []any{"body", "redial", "busy", "attempts"}, "Value error, attempts must be between 1 and 20"},
			{"value_error", []any{"body", "redial", "no_answer", "attempts"}, "Value error, attempts must be between 1 and 20"}}},
		{"redial per day", withContacts(`"redial":{"answering_machine":{"attempts":2,"per_day":21}}`),
			[]problem{{"value_error", []any{"body", "redial", "answering_machine", "per_day"}, "Value error, per_day must be between 1 and 20"}}},
		{"redial gap over a week", withContacts(`"redial":{"carrier_failure":{"attempts":2,"min_gap_seconds":604801}}`),
			[]problem{{"value_error", []any{"body", "redial", "carrier_failure", "min_gap_seconds"}, "Value error, min_gap_seconds must be between 0 and 604800"}}},
		{"redial negative gap", withContacts(`"redial":{"busy":{"attempts":2,"min_gap_seconds":-1}}`),
			[]problem{{"value_error", []any{"body", "redial", "busy", "min_gap_seconds"}, "Value error, min_gap_seconds must be between 0 and 604800"}}},
		{"last attempt variables not an object", withContacts(`"redial":{"last_attempt_variables":[1]}`),
			[]problem{{"dict_type", []any{"body", "redial", "last_attempt_variables"}, "Input should be a valid dictionary"}}},
		{"several at once", `{"agent_id":"x","name":"` + strings.Repeat("n", 201) + `","contacts":[],"pacing":{"max_concurrent":0}}`, []problem{
			{"uuid_parsing", []any{"body", "agent_id"}, "Input should be a valid UUID"},
			{"string_too_long", []any{"body", "name"}, "String should have at most 200 characters"},
			{"value_error", []any{"body", "pacing", "max_concurrent"}, "Value error, max_concurrent must be between 1 and 10000"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, items, err := campaigninput.Decode("application/json", []byte(tc.body))
			if err != nil || req != nil {
				t.Fatalf("Decode = %+v, %v; want problems only", req, err)
			}
			expectProblems(t, items, tc.want...)
		})
	}
}

// The bounds are inclusive: what they name is accepted, and the rates and
// redial rules become the spec's.
func TestDecodeJSONBoundsAccepted(t *testing.T) {
	body := withContacts(`"name":"` + strings.Repeat("n", 200) + `",
		"pacing":{"calls_per_second":1000,"max_concurrent":10000},
		"calling_window":{"start":"09:00","end":"17:00","days":["mon","fri"],"start_at":"2026-06-01T09:00:00Z","end_at":"2026-06-02T09:00:00Z"},
		"redial":{"busy":{"attempts":20,"per_day":20,"min_gap_seconds":604800},"no_answer":{"attempts":1},
			"last_attempt_variables":{"final":true}}`)
	req, items, err := campaigninput.Decode("application/json", []byte(body))
	if err != nil || items != nil {
		t.Fatalf("Decode = %v, %v; want a request", items, err)
	}
	if p := req.Spec.Pacing; p.CallsPerMinute != 60000 || p.MaxConcurrent != 10000 {
		t.Errorf("pacing = %+v; want 60000 a minute (1000 a second) and 10000 at once", p)
	}
	w := req.Spec.CallingWindow
	if w.Start != "09:00" || w.End != "17:00" || fmt.Sprint(w.Days) != "[mon fri]" ||
		w.StartAt == nil || w.EndAt == nil || !w.StartAt.Time.Equal(time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)) ||
		w.EndAt.Sub(w.StartAt.Time) != 24*time.Hour {
		t.Errorf("window = %+v; want the hours, days and dates sent", w)
	}
	busy := req.Spec.Redial.Busy
	if busy == nil || busy.Attempts != 20 || busy.PerDay != 20 || busy.MinGap == nil || busy.MinGap.Duration != 7*24*time.Hour {
		t.Errorf("busy rule = %+v; want 20 attempts, 20 a day, a week apart", busy)
	}
	if na := req.Spec.Redial.NoAnswer; na == nil || na.Attempts != 1 || na.MinGap != nil {
		t.Errorf("no_answer rule = %+v; want 1 attempt and no gap", na)
	}
	if v := req.Spec.Redial.LastAttemptVariables; v == nil || string(v.Raw) != `{"final":true}` {
		t.Errorf("last attempt variables = %v; want them as sent", v)
	}
	// One call every minute is the slowest pace.
	slow := withContacts(`"pacing":{"calls_per_second":0.0166667}`)
	if req, items, _ := campaigninput.Decode("application/json", []byte(slow)); items != nil || req.Spec.Pacing.CallsPerMinute != 1 {
		t.Errorf("calls_per_second 1/60: %v; want accepted as 1 a minute", items)
	}
}

// A body of another type is refused with what to send instead.
func TestDecodeRefusesOtherTypes(t *testing.T) {
	for _, ct := range []string{"text/csv", "application/x-www-form-urlencoded", "text/plain; charset=utf-8"} {
		if _, _, err := campaigninput.Decode(ct, []byte("to_number\n+12125550100\n")); !errors.Is(err, campaigninput.ErrUnsupportedType) {
			t.Errorf("Decode(%q) error = %v; want ErrUnsupportedType", ct, err)
		}
		if _, _, err := campaigninput.DecodeContacts(ct, nil); !errors.Is(err, campaigninput.ErrUnsupportedType) {
			t.Errorf("DecodeContacts(%q) error = %v; want ErrUnsupportedType", ct, err)
		}
	}
	if msg := campaigninput.ErrUnsupportedType.Error(); !strings.Contains(msg, "application/json") || !strings.Contains(msg, "multipart/form-data") {
		t.Errorf("the error says %q; want it to name both types accepted", msg)
	}
}

// form is a multipart body of fields; contacts, when not nil, is the CSV
// file's content.
func form(t *testing.T, fields map[string]string, contacts []byte) ([]byte, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for name, value := range fields {
		if err := mw.WriteField(name, value); err != nil {
			t.Fatal(err)
		}
	}
	if contacts != nil {
		fw, err := mw.CreateFormFile("contacts", "contacts.csv")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(contacts)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return body.Bytes(), mw.FormDataContentType()
}

// A multipart upload sends the JSON body's fields as form fields (the
// objects as JSON text) and its contacts as a CSV file whose other
// columns are the contacts' variables.
func TestDecodeMultipart(t *testing.T) {
	csv := []byte("to_number,customer_name\n+12125550100,Ada\n+12125550101,Grace\n")
	body, ct := form(t, map[string]string{"agent_id": agentID, "name": "Renewals", "pacing": `{"calls_per_minute":30}`,
		"unknown": "ignored"}, csv)
	req, items, err := campaigninput.Decode(ct, body)
	if err != nil || items != nil {
		t.Fatalf("Decode = %v, %v; want a request", items, err)
	}
	if req.Spec.AgentID != agentID || req.Spec.DisplayName != "Renewals" || req.Spec.Pacing.CallsPerMinute != 30 {
		t.Errorf("spec = %+v; want the form's agent, name and pace", req.Spec)
	}
	if len(req.Contacts) != 2 || req.Contacts[1].ToNumber != "+12125550101" ||
		!strings.Contains(string(req.Contacts[1].Variables), `"customer_name":"Grace"`) {
		t.Errorf("contacts = %+v; want both rows with their variables", req.Contacts)
	}

	for _, tc := range []struct {
		name    string
		fields  map[string]string
		csv     []byte
		want    []problem
		wantErr bool
	}{
		{"no file", map[string]string{"agent_id": agentID}, nil,
			[]problem{{"missing", []any{"body", "contacts"}, "Field required: the CSV file of contacts"}}, false},
		{"no agent", nil, csv, []problem{{"missing", []any{"body", "agent_id"}, "Field required"}}, false},
		{"pacing not JSON", map[string]string{"agent_id": agentID, "pacing": "calls_per_minute=30"}, csv,
			[]problem{{"json_invalid", []any{"body", "pacing"}, "Field should be a JSON object"}}, false},
		{"redial bound", map[string]string{"agent_id": agentID, "redial": `{"busy":{"attempts":30}}`}, csv,
			[]problem{{"value_error", []any{"body", "redial", "busy", "attempts"}, "Value error, attempts must be between 1 and 20"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, ct := form(t, tc.fields, tc.csv)
			req, items, err := campaigninput.Decode(ct, body)
			if err != nil || req != nil {
				t.Fatalf("Decode = %+v, %v; want problems only", req, err)
			}
			expectProblems(t, items, tc.want...)
		})
	}

	// A body cut short is refused, not read as the part that arrived.
	if req, items, err := campaigninput.Decode(ct, body[:len(body)/2]); req != nil || (err == nil && items == nil) {
		t.Errorf("truncated body: %+v, %v, %v; want it refused", req, items, err)
	}
	// A body sent with another boundary has no parts: the file is missing.
	_, items, err = campaigninput.Decode("multipart/form-data; boundary=other", body)
	if err != nil {
		t.Fatal(err)
	}
	expectProblems(t, items, problem{"missing", []any{"body", "contacts"}, "Field required: the CSV file of contacts"},
		problem{"missing", []any{"body", "agent_id"}, "Field required"})
}

// Adding contacts takes the same shapes as a create, and ignores its
// other fields.
func TestDecodeContacts(t *testing.T) {
	in, items, err := campaigninput.DecodeContacts("application/json", []byte(`{"name":"ignored","contacts":`+contacts(3)+`}`))
	if err != nil || items != nil || len(in) != 3 || in[2].ToNumber != "+12125550002" {
		t.Fatalf("JSON: %+v, %v, %v; want 3 contacts", in, items, err)
	}
	body, ct := form(t, map[string]string{"agent_id": "not checked here"}, []byte("to_number\n+12125550100\n"))
	if in, items, err := campaigninput.DecodeContacts(ct, body); err != nil || items != nil || len(in) != 1 {
		t.Fatalf("CSV: %+v, %v, %v; want 1 contact", in, items, err)
	}
	for _, tc := range []struct {
		name, body string
		want       []problem
	}{
		{"malformed", `{"contacts":[`, []problem{{"json_invalid", []any{"body", 13}, "JSON decode error"}}},
		{"no contacts", `{}`, []problem{{"missing", []any{"body", "contacts"}, "Field required"}}},
		{"too many", `{"contacts":` + contacts(1001) + `}`,
			[]problem{{"too_long", []any{"body", "contacts"}, "List should have at most 1000 items"}}},
		{"variables a string", `{"contacts":[{"to_number":"+12125550100","variables":"Ada"}]}`,
			[]problem{{"dict_type", []any{"body", "contacts", 0, "variables"}, "Input should be a valid dictionary"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, items, err := campaigninput.DecodeContacts("application/json", []byte(tc.body))
			if err != nil || in != nil {
				t.Fatalf("DecodeContacts = %+v, %v; want problems only", in, err)
			}
			expectProblems(t, items, tc.want...)
		})
	}
	body, ct = form(t, nil, nil)
	_, items, err = campaigninput.DecodeContacts(ct, body)
	if err != nil {
		t.Fatal(err)
	}
	expectProblems(t, items, problem{"missing", []any{"body", "contacts"}, "Field required: the CSV file of contacts"})
}

// The dashboard's form is decoded as the same multipart request, with what
// a person types trimmed and in the same words when it is wrong.
func TestFromForm(t *testing.T) {
	csv := []byte("to_number\n+12125550100\n")
	req, items := campaigninput.FromForm(campaigninput.Form{AgentID: " " + agentID + " ", Name: " Renewals ",
		CallsPerMinute: " 120 ", Start: "09:00", End: "17:00"}, csv)
	if items != nil {
		t.Fatalf("FromForm = %v; want a request", items)
	}
	if s := req.Spec; s.AgentID != agentID || s.DisplayName != "Renewals" || s.Pacing.CallsPerMinute != 120 ||
		s.CallingWindow.Start != "09:00" || s.CallingWindow.End != "17:00" || len(req.Contacts) != 1 {
		t.Errorf("request = %+v; want the form's values, trimmed", req)
	}

	for _, tc := range []struct {
		name string
		form campaigninput.Form
		csv  string
		want []problem
	}{
		{"pace not a number", campaigninput.Form{AgentID: agentID, CallsPerMinute: "ten"}, "to_number\n+12125550100\n", []problem{
			{"int_parsing", []any{"body", "pacing", "calls_per_minute"}, "Calls per minute should be a whole number"},
			{"value_error", []any{"body", "pacing", "calls_per_minute"}, "Value error, calls_per_minute must be between 1 and 60000"}}},
		{"no agent", campaigninput.Form{}, "to_number\n+12125550100\n",
			[]problem{{"missing", []any{"body", "agent_id"}, "Field required"}}},
		{"start typed as words", campaigninput.Form{AgentID: agentID, Start: " 9 am "}, "to_number\n+12125550100\n",
			[]problem{{"value_error", []any{"body", "calling_window"}, `Value error, time of day "9 am" is not HH:MM`}}},
		{"bad file", campaigninput.Form{AgentID: agentID}, "phone\n+12125550100\n",
			[]problem{{"csv_invalid", []any{"body", "contacts"}, "the CSV header has no to_number column"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, items := campaigninput.FromForm(tc.form, []byte(tc.csv))
			if req != nil {
				t.Fatalf("FromForm = %+v; want problems only", req)
			}
			expectProblems(t, items, tc.want...)
		})
	}
}

// Contacts refused by the service are reported where the request put
// them: a CSV line or a list index, then the field, with the place in the
// message too; the refused contact's own ctx is not changed.
func TestContactProblemsSayWhere(t *testing.T) {
	ownCtx := map[string]any{"max_length": 1024}
	items := campaigninput.ContactProblems([]campaigns.Invalid{
		{Index: -1, Line: 7, Item: validation.Item{Type: "value_error", Loc: []any{"to_number"}, Msg: "Value error, not a phone number", Input: "hello"}},
		{Index: 2, Item: validation.Item{Type: "string_too_long", Loc: []any{"variables", "note"}, Msg: "too long", Ctx: ownCtx}},
		{Index: -1, Item: validation.Item{Type: "too_long", Msg: "too many contacts"}},
	})
	want := []problem{
		{"value_error", []any{"body", "contacts", "line 7", "to_number"}, "line 7: Value error, not a phone number"},
		{"string_too_long", []any{"body", "contacts", 2, "variables", "note"}, "contact 2: too long"},
		{"too_long", []any{"body", "contacts"}, "the contacts: too many contacts"},
	}
	expectProblems(t, items, want...)
	if items[0].Ctx["line"] != 7 || items[0].Input != "hello" {
		t.Errorf("line problem ctx %v input %v; want line 7 and the input", items[0].Ctx, items[0].Input)
	}
	if _, changed := ownCtx["line"]; changed || items[1].Ctx["max_length"] != 1024 {
		t.Errorf("ctx %v (the contact's own: %v); want a copy keeping max_length", items[1].Ctx, ownCtx)
	}
}
