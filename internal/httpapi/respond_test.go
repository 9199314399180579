package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/internal/callinput"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// TestValidationEchoIsClipped: a 422 quotes at most MaxEchoedInputChars
// characters of any input, in `input` and in `loc`.
func TestValidationEchoIsClipped(t *testing.T) {
	long := strings.Repeat("é", 5000)
	body := `{"agent_id":"` + long + `","to_number":"` + long + `","variables":{"` + long + `":1},"metadata":[` +
		strings.Repeat(`1,`, 3000) + `1]}`
	_, items := callinput.DecodeRequest([]byte(body), "US")
	rec := httptest.NewRecorder()
	writeValidation(rec, items)
	var got struct {
		Detail []struct {
			Type  string `json:"type"`
			Loc   []any  `json:"loc"`
			Input any    `json:"input"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Detail) != 4 {
		t.Fatalf("want 4 items, got %s", rec.Body)
	}
	clipped := strings.Repeat("é", MaxEchoedInputChars) + "…"
	for _, item := range got.Detail {
		switch item.Type {
		case "uuid_parsing", "value_error":
			if item.Input != clipped {
				t.Errorf("%s input = %.40q... (%d characters), want the first %d and …", item.Type, item.Input,
					utf8.RuneCountInString(fmt.Sprint(item.Input)), MaxEchoedInputChars)
			}
		case "string_too_long": // the variable name, in loc
			if item.Loc[2] != clipped || item.Input != clipped {
				t.Errorf("variable name echoed as loc %.40q..., input %.40q...", item.Loc[2], item.Input)
			}
		case "dict_type": // a long array: its JSON text, clipped
			if s, _ := item.Input.(string); !strings.HasPrefix(s, "[1,1,") || utf8.RuneCountInString(s) != MaxEchoedInputChars+1 {
				t.Errorf("metadata input = %.40q..., want its JSON text clipped", item.Input)
			}
		default:
			t.Errorf("unexpected item %+v", item)
		}
	}
	if rec.Body.Len() > 8<<10 {
		t.Errorf("a 422 of %d bytes", rec.Body.Len())
	}

	// Short inputs are echoed as they are, with their type.
	_, items = callinput.DecodeRequest([]byte(`{"agent_id":12,"to_number":"hello","metadata":[1,"a"]}`), "US")
	for _, item := range items {
		if c := clipItem(item); fmt.Sprint(c.Input) != fmt.Sprint(item.Input) {
			t.Errorf("short input %v clipped to %v", item.Input, c.Input)
		}
	}
}

// FuzzCreateCallValidationReply: whatever create-call body is refused, its
// 422 renders as a body any client can decode, each item with the
// documented keys and at most MaxEchoedInputChars of the caller's input
// and location keys, so the body stays short. (What the items say is
// callinput's FuzzDecodeRequest.)
//
// `make test` runs the seeds below, a long value of each kind an item
// echoes; explore with
// go test -run '^$' -fuzz FuzzCreateCallValidationReply -fuzztime 60s ./internal/httpapi
func FuzzCreateCallValidationReply(f *testing.F) {
	long := strings.Repeat("é", 2*MaxEchoedInputChars)
	manyVars := make([]string, callinput.MaxVariables+1)
	for i := range manyVars {
		manyVars[i] = fmt.Sprintf(`"v%d":%d`, i, i)
	}
	for _, seed := range []string{
		``, `[1e400]`, `{"agent_id":`, `"` + long + `"`,
		`{"agent_id":"` + long + `","to_number":"` + long + `","from_number":12}`,
		`{"agent_id":12,"to_number":"+1415","variables":{"` + long + `":"` + strings.Repeat(long, 4) + `","":1}}`,
		`{"agent_id":12,"to_number":"+1415","variables":{` + strings.Join(manyVars, ",") + `}}`,
		`{"agent_id":12,"to_number":"+1415","metadata":[` + strings.Repeat(`"`+long+`",`, 3) + `1]}`,
		`{"agent_id":12,"to_number":"+1415","metadata":{"` + long + `":` + strings.Repeat(`[`, 9) + strings.Repeat(`]`, 9) + `}}`,
		`{"agent_id":12,"to_number":"+1415","metadata":{"` + long + `":{"` + long + `":1e400}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, items := callinput.DecodeRequest(body, "US"); items != nil {
			checkRendered(t, items)
		}
	})
}

// checkRendered asserts the documented shape of a rendered 422.
func checkRendered(t *testing.T, errs []validation.Item) {
	t.Helper()
	rec := httptest.NewRecorder()
	writeValidation(rec, errs)
	var rendered struct {
		Detail []map[string]any `json:"detail"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &rendered); err != nil || rec.Code != 422 {
		t.Fatalf("422 %d body %s does not decode: %v", rec.Code, rec.Body, err)
	}
	for _, item := range rendered.Detail {
		for _, k := range []string{"type", "loc", "msg", "input"} {
			if _, ok := item[k]; !ok {
				t.Fatalf("rendered item %v lacks %s", item, k)
			}
		}
		if s, ok := item["input"].(string); ok && utf8.RuneCountInString(s) > MaxEchoedInputChars+1 {
			t.Fatalf("input echoed in %d characters", utf8.RuneCountInString(s))
		}
		for _, step := range item["loc"].([]any) {
			if s, ok := step.(string); ok && utf8.RuneCountInString(s) > MaxEchoedInputChars+1 {
				t.Fatalf("loc step of %d characters", utf8.RuneCountInString(s))
			}
		}
	}
	if limit := len(errs) * 4 << 10; rec.Body.Len() > limit {
		t.Fatalf("%d items rendered in %d bytes", len(errs), rec.Body.Len())
	}
}

// A create-call 422 redacts the credentials of a URL in a variable, a long
// one (clipped after the redaction) and one nested in an object.
func TestCallValidationDoesNotEchoCredentials(t *testing.T) {
	secretURL := "https://hookuser:hunter2-pass@hooks.example.com/in?token=tok-secret-77&x=1#"
	body := `{"agent_id":"7a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d","to_number":"+14155551234",` +
		`"variables":{"callback":"` + secretURL + strings.Repeat("a", 1100) + `"},` +
		`"metadata":["` + secretURL + `"]}`
	_, items := callinput.DecodeRequest([]byte(body), "US")
	if len(items) == 0 {
		t.Fatal("the request is valid")
	}
	rec := httptest.NewRecorder()
	writeValidation(rec, items)
	for _, secret := range []string{"hunter2-pass", "tok-secret-77"} {
		if strings.Contains(rec.Body.String(), secret) {
			t.Errorf("the 422 echoes %q: %s", secret, rec.Body)
		}
	}
	if !strings.Contains(rec.Body.String(), "https://REDACTED@hooks.example.com/in?token=REDACTED&x=1") {
		t.Errorf("the 422 does not echo the redacted URL: %s", rec.Body)
	}
}
