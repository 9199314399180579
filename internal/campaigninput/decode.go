// Package campaigninput decodes a request to create a campaign, the same
// for the REST API (JSON, or multipart/form-data with a CSV file) and the
// dashboard's form, and reports its problems in the one validation shape
// (package validation), so that both refuse a bad campaign in the same
// words.
package campaigninput

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"mime"
	"mime/multipart"
	"regexp"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/campaigns"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// Limits of one request.
const (
	// MaxInlineContacts is how many contacts a JSON body may list; more
	// are uploaded as a CSV file.
	MaxInlineContacts = 1000
	// MaxUploadContacts is how many rows a CSV upload may hold.
	MaxUploadContacts = 500_000
	// MaxJSONBytes bounds a JSON body (1,000 contacts with variables).
	MaxJSONBytes = 2 << 20
	// MaxUploadBytes bounds a multipart body: 100,000 contacts with a few
	// variables each take about 6 MB. The CSV in it is read within
	// campaigns' bounds (campaigns.MaxCSVBytes and the others).
	MaxUploadBytes = campaigns.MaxCSVBytes
)

// Request is a decoded, valid request.
type Request struct {
	Spec     switchboardv1.CampaignSpec
	Contacts []campaigns.ContactInput
}

// body is the JSON shape; multipart sends the same fields as form fields,
// the objects as JSON text.
type body struct {
	AgentID       string    `json:"agent_id"`
	Name          string    `json:"name"`
	Contacts      []contact `json:"contacts"`
	CallingWindow *window   `json:"calling_window"`
	Pacing        *pacing   `json:"pacing"`
	Redial        *redial   `json:"redial"`
}

type contact struct {
	ToNumber  string          `json:"to_number"`
	Timezone  string          `json:"timezone"`
	Variables json.RawMessage `json:"variables"`
	Metadata  json.RawMessage `json:"metadata"`
}

type window struct {
	Start   string   `json:"start"`
	End     string   `json:"end"`
	Days    []string `json:"days"`
	StartAt *string  `json:"start_at"`
	EndAt   *string  `json:"end_at"`
}

type pacing struct {
	CallsPerSecond *float64 `json:"calls_per_second"`
	CallsPerMinute *int     `json:"calls_per_minute"`
	MaxConcurrent  *int     `json:"max_concurrent"`
}

type rule struct {
	Attempts      int `json:"attempts"`
	MinGapSeconds int `json:"min_gap_seconds"`
	PerDay        int `json:"per_day"`
}

type redial struct {
	Busy                 *rule           `json:"busy"`
	NoAnswer             *rule           `json:"no_answer"`
	AnsweringMachine     *rule           `json:"answering_machine"`
	CarrierFailure       *rule           `json:"carrier_failure"`
	LastAttemptVariables json.RawMessage `json:"last_attempt_variables"`
}

// ErrUnsupportedType: the body is neither JSON nor multipart/form-data.
var ErrUnsupportedType = errors.New("send the campaign as application/json, or as multipart/form-data with the CSV in the file field contacts")

// Decode decodes a body of contentType. A multipart body's CSV may hold up
// to MaxUploadContacts rows; a JSON body's list MaxInlineContacts.
func Decode(contentType string, raw []byte) (*Request, []validation.Item, error) {
	mediaType, params, _ := mime.ParseMediaType(contentType)
	switch mediaType {
	case "application/json", "":
		return DecodeJSON(raw, MaxInlineContacts)
	case "multipart/form-data":
		return decodeMultipart(raw, params["boundary"])
	}
	return nil, nil, ErrUnsupportedType
}

// DecodeJSON decodes a JSON body listing at most maxContacts contacts.
func DecodeJSON(raw []byte, maxContacts int) (*Request, []validation.Item, error) {
	obj, items := validation.ParseObject(raw)
	if items != nil {
		return nil, items, nil
	}
	var b body
	var p validation.Problems
	for field, dst := range map[string]any{"agent_id": &b.AgentID, "name": &b.Name, "contacts": &b.Contacts,
		"calling_window": &b.CallingWindow, "pacing": &b.Pacing, "redial": &b.Redial} {
		decodeField(obj, field, dst, &p)
	}
	return finish(b, jsonContacts(obj, b.Contacts, maxContacts, &p), p)
}

// jsonContacts checks a JSON body's list of contacts.
func jsonContacts(obj *validation.Object, list []contact, maxContacts int, p *validation.Problems) []campaigns.ContactInput {
	if _, ok := obj.Fields["contacts"]; !ok {
		p.Fail("missing", []any{"body", "contacts"}, "Field required", nil, nil)
	} else if len(list) > maxContacts {
		p.Fail("too_long", []any{"body", "contacts"}, fmt.Sprintf("List should have at most %d items; upload more "+
			"as a CSV file (multipart/form-data, file field contacts)", maxContacts), nil,
			map[string]any{"max_length": maxContacts})
	}
	in := make([]campaigns.ContactInput, len(list))
	for i, c := range list {
		in[i] = campaigns.ContactInput{ToNumber: c.ToNumber, Timezone: c.Timezone,
			Variables: object(c.Variables, []any{"body", "contacts", i, "variables"}, p),
			Metadata:  object(c.Metadata, []any{"body", "contacts", i, "metadata"}, p)}
	}
	return in
}

// decodeField decodes the top-level field into dst, recording a problem
// when it has the wrong shape.
func decodeField(obj *validation.Object, field string, dst any, p *validation.Problems) {
	raw, ok := obj.Fields[field]
	if !ok || string(raw) == "null" {
		return
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		p.Fail("model_type", []any{"body", field}, "Input has the wrong shape: "+err.Error(), validation.Input(raw), nil)
	}
}

// object is raw when it is a JSON object (or absent), compacted.
func object(raw json.RawMessage, loc []any, p *validation.Problems) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		p.Fail("dict_type", loc, "Input should be a valid dictionary", validation.Input(raw), nil)
		return nil
	}
	var out bytes.Buffer
	_ = json.Compact(&out, raw) // valid: it decoded
	return out.Bytes()
}

func decodeMultipart(raw []byte, boundary string) (*Request, []validation.Item, error) {
	var b body
	var p validation.Problems
	in, items, err := readMultipart(raw, boundary, &p, func(name string, value []byte) { formField(&b, name, value, &p) })
	if items != nil || err != nil {
		return nil, items, err
	}
	return finish(b, in, p)
}

// readMultipart reads a multipart body: the CSV of its file field
// contacts, and each other field through field.
func readMultipart(raw []byte, boundary string, p *validation.Problems,
	field func(name string, value []byte)) ([]campaigns.ContactInput, []validation.Item, error) {
	mr := multipart.NewReader(bytes.NewReader(raw), boundary)
	var in []campaigns.ContactInput
	sawContacts := false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, []validation.Item{{Type: "multipart_invalid", Loc: []any{"body"},
				Msg: "The multipart body could not be read: " + err.Error(), Input: nil}}, nil
		}
		name := part.FormName()
		if name == "contacts" {
			sawContacts = true
			if in, err = campaigns.ReadCSV(part, MaxUploadContacts); err != nil {
				p.Add(csvProblem(err))
			}
			continue
		}
		value, err := io.ReadAll(io.LimitReader(part, 1<<20))
		if err != nil {
			return nil, nil, err
		}
		field(name, value)
	}
	if !sawContacts {
		p.Fail("missing", []any{"body", "contacts"}, "Field required: the CSV file of contacts", nil, nil)
	}
	return in, nil, nil
}

// formField reads one form field: text, or the JSON of an object.
func formField(b *body, name string, value []byte, p *validation.Problems) {
	var dst any
	switch name {
	case "agent_id":
		b.AgentID = string(value)
		return
	case "name":
		b.Name = string(value)
		return
	case "calling_window":
		dst = &b.CallingWindow
	case "pacing":
		dst = &b.Pacing
	case "redial":
		dst = &b.Redial
	default:
		return // unknown fields are ignored, as on create-call
	}
	if err := json.Unmarshal(value, dst); err != nil {
		p.Fail("json_invalid", []any{"body", name}, "Field should be a JSON object: "+err.Error(), string(value), nil)
	}
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// finish checks the fields and builds the spec.
func finish(b body, in []campaigns.ContactInput, p validation.Problems) (*Request, []validation.Item, error) {
	spec := switchboardv1.CampaignSpec{AgentID: b.AgentID, DisplayName: b.Name}
	switch {
	case b.AgentID == "":
		p.Fail("missing", []any{"body", "agent_id"}, "Field required", nil, nil)
	case !uuidPattern.MatchString(b.AgentID):
		p.Fail("uuid_parsing", []any{"body", "agent_id"}, "Input should be a valid UUID", b.AgentID, nil)
	}
	if len(b.Name) > 200 {
		p.Fail("string_too_long", []any{"body", "name"}, "String should have at most 200 characters", b.Name, nil)
	}
	spec.CallingWindow = windowSpec(b.CallingWindow, &p)
	spec.Pacing = pacingSpec(b.Pacing, &p)
	spec.Redial = redialSpec(b.Redial, &p)
	if len(p) > 0 {
		return nil, p, nil
	}
	return &Request{Spec: spec, Contacts: in}, nil, nil
}

func windowSpec(w *window, p *validation.Problems) switchboardv1.CallingWindow {
	var out switchboardv1.CallingWindow
	if w == nil {
		return out
	}
	out.Start, out.End = w.Start, w.End
	for _, d := range w.Days {
		out.Days = append(out.Days, switchboardv1.Weekday(d))
	}
	out.StartAt = instant(w.StartAt, "start_at", p)
	out.EndAt = instant(w.EndAt, "end_at", p)
	if _, err := campaigns.WindowOf(out); err != nil {
		p.Fail("value_error", []any{"body", "calling_window"}, "Value error, "+err.Error(), nil, nil)
	}
	if out.StartAt != nil && out.EndAt != nil && !out.StartAt.Before(out.EndAt) {
		p.Fail("value_error", []any{"body", "calling_window", "end_at"}, "Value error, end_at must be after start_at", *w.EndAt, nil)
	}
	return out
}

func instant(s *string, field string, p *validation.Problems) *metav1.Time {
	if s == nil {
		return nil
	}
	t, err := time.Parse(time.RFC3339, *s)
	if err != nil {
		p.Fail("datetime_parsing", []any{"body", "calling_window", field}, "Input should be an RFC 3339 date and time", *s, nil)
		return nil
	}
	return &metav1.Time{Time: t}
}

// Pacing bounds, as the Campaign resource's.
const (
	maxCallsPerMinute = 60000
	maxConcurrent     = 10000
)

func pacingSpec(in *pacing, p *validation.Problems) switchboardv1.CampaignPacing {
	out := switchboardv1.CampaignPacing{CallsPerMinute: 60, MaxConcurrent: 10}
	if in == nil {
		return out
	}
	loc := func(f string) []any { return []any{"body", "pacing", f} }
	switch {
	case in.CallsPerSecond != nil && in.CallsPerMinute != nil:
		p.Fail("value_error", loc("calls_per_second"), "Value error, give calls_per_second or calls_per_minute, not both", *in.CallsPerSecond, nil)
	case in.CallsPerSecond != nil:
		perMin := math.Round(*in.CallsPerSecond * 60)
		if perMin < 1 || perMin > maxCallsPerMinute {
			p.Fail("value_error", loc("calls_per_second"), "Value error, calls_per_second must be between 1/60 and 1000", *in.CallsPerSecond, nil)
		}
		out.CallsPerMinute = int32(max(1, min(perMin, maxCallsPerMinute)))
	case in.CallsPerMinute != nil:
		if *in.CallsPerMinute < 1 || *in.CallsPerMinute > maxCallsPerMinute {
			p.Fail("value_error", loc("calls_per_minute"), "Value error, calls_per_minute must be between 1 and 60000", *in.CallsPerMinute, nil)
		}
		out.CallsPerMinute = int32(max(1, min(*in.CallsPerMinute, maxCallsPerMinute)))
	}
	if in.MaxConcurrent != nil {
		if *in.MaxConcurrent < 1 || *in.MaxConcurrent > maxConcurrent {
			p.Fail("value_error", loc("max_concurrent"), "Value error, max_concurrent must be between 1 and 10000", *in.MaxConcurrent, nil)
		}
		out.MaxConcurrent = int32(max(1, min(*in.MaxConcurrent, maxConcurrent)))
	}
	return out
}

func redialSpec(in *redial, p *validation.Problems) switchboardv1.RedialPolicy {
	var out switchboardv1.RedialPolicy
	if in == nil {
		return out
	}
	out.Busy = ruleSpec(in.Busy, "busy", p)
	out.NoAnswer = ruleSpec(in.NoAnswer, "no_answer", p)
	out.AnsweringMachine = ruleSpec(in.AnsweringMachine, "answering_machine", p)
	out.CarrierFailure = ruleSpec(in.CarrierFailure, "carrier_failure", p)
	if vars := object(in.LastAttemptVariables, []any{"body", "redial", "last_attempt_variables"}, p); vars != nil {
		out.LastAttemptVariables = &apiextensionsv1.JSON{Raw: vars}
	}
	return out
}

// maxGap bounds a redial's minimum gap: a week.
const maxGap = 7 * 24 * time.Hour

func ruleSpec(r *rule, outcome string, p *validation.Problems) *switchboardv1.RedialRule {
	if r == nil {
		return nil
	}
	loc := func(f string) []any { return []any{"body", "redial", outcome, f} }
	if r.Attempts < 1 || r.Attempts > 20 {
		p.Fail("value_error", loc("attempts"), "Value error, attempts must be between 1 and 20", r.Attempts, nil)
	}
	if r.PerDay < 0 || r.PerDay > 20 {
		p.Fail("value_error", loc("per_day"), "Value error, per_day must be between 1 and 20 (0 or absent: no bound)", r.PerDay, nil)
	}
	gap := time.Duration(r.MinGapSeconds) * time.Second
	if r.MinGapSeconds < 0 || gap > maxGap {
		p.Fail("value_error", loc("min_gap_seconds"), "Value error, min_gap_seconds must be between 0 and 604800 (a week)", r.MinGapSeconds, nil)
	}
	out := &switchboardv1.RedialRule{Attempts: int32(max(1, min(r.Attempts, 20))), PerDay: int32(max(0, min(r.PerDay, 20)))}
	if gap > 0 {
		out.MinGap = &metav1.Duration{Duration: gap}
	}
	return out
}

// ContactProblems are the contacts the service refused, as validation
// items naming the CSV line or the list index.
func ContactProblems(invalid []campaigns.Invalid) []validation.Item {
	items := make([]validation.Item, len(invalid))
	for i, v := range invalid {
		loc := []any{"body", "contacts"}
		ctx := maps.Clone(v.Ctx)
		switch {
		case v.Line > 0:
			loc = append(loc, "line "+fmt.Sprint(v.Line))
			if ctx == nil {
				ctx = map[string]any{}
			}
			ctx["line"] = v.Line
		case v.Index >= 0:
			loc = append(loc, v.Index)
		}
		items[i] = validation.Item{Type: v.Type, Loc: append(loc, v.Loc...), Msg: v.Where() + ": " + v.Msg,
			Input: v.Input, Ctx: ctx}
	}
	return items
}

// csvProblem is the validation item of a CSV file refused: its loc names
// the line and the column (by its header name) where the file was
// refused, and its ctx their numbers.
func csvProblem(err error) validation.Item {
	item := validation.Item{Type: "csv_invalid", Loc: []any{"body", "contacts"}, Msg: err.Error()}
	var ce *campaigns.CSVError
	if !errors.As(err, &ce) {
		return item
	}
	if ce.Item != nil {
		item.Type, item.Input, item.Ctx = ce.Item.Type, ce.Item.Input, maps.Clone(ce.Item.Ctx)
	}
	if ce.Line > 0 {
		item.Loc = append(item.Loc, "line "+fmt.Sprint(ce.Line))
		if item.Ctx == nil {
			item.Ctx = map[string]any{}
		}
		item.Ctx["line"] = ce.Line
	}
	if ce.Column > 0 {
		item.Loc = append(item.Loc, columnKey(ce))
		item.Ctx["column"] = ce.Column
	}
	return item
}

// columnKey names a column in a loc: its header name, or "column 3" when
// it has none yet (on the header line, or an empty name).
func columnKey(ce *campaigns.CSVError) string {
	if ce.Name == "" || ce.Line == 1 {
		return "column " + fmt.Sprint(ce.Column)
	}
	return ce.Name
}

// Form is the dashboard's campaign form, as typed.
type Form struct {
	AgentID, Name, CallsPerMinute, Start, End string
}

// FromForm decodes the dashboard's form and its CSV file as a multipart
// POST /v1/campaigns with the same fields.
func FromForm(f Form, csv []byte) (*Request, []validation.Item) {
	b := body{AgentID: strings.TrimSpace(f.AgentID), Name: strings.TrimSpace(f.Name)}
	var p validation.Problems
	if v := strings.TrimSpace(f.CallsPerMinute); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			p.Fail("int_parsing", []any{"body", "pacing", "calls_per_minute"}, "Calls per minute should be a whole number", v, nil)
		}
		b.Pacing = &pacing{CallsPerMinute: &n}
	}
	if f.Start != "" || f.End != "" {
		b.CallingWindow = &window{Start: strings.TrimSpace(f.Start), End: strings.TrimSpace(f.End)}
	}
	in, err := campaigns.ReadCSV(bytes.NewReader(csv), MaxUploadContacts)
	if err != nil {
		p.Add(csvProblem(err))
	}
	req, items, _ := finish(b, in, p) // finish fails only through items
	return req, items
}
