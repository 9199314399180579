package campaigninput_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"runtime"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/campaigninput"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

const agentID = "7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f"

// upload is a multipart campaign body with csv as its contacts file.
func upload(t testing.TB, csv []byte) ([]byte, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("agent_id", agentID)
	fw, err := mw.CreateFormFile("contacts", "contacts.csv")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(csv)
	_ = mw.Close()
	return body.Bytes(), mw.FormDataContentType()
}

// AmplifyingCSV is the shape that took 216 MB of the operator's memory
// for a 213 KB file: 100 column names of 1,000 characters, and 1,000 rows
// of empty fields, each row an object naming every column.
func amplifyingCSV() []byte {
	var b bytes.Buffer
	b.WriteString("to_number")
	for i := range 100 {
		fmt.Fprintf(&b, ",%03d%s", i, strings.Repeat("x", 997))
	}
	b.WriteString("\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "+1212555%04d%s\n", i, strings.Repeat(",", 100))
	}
	return b.Bytes()
}

// The amplifying CSV is refused at its header, longer than a row may be,
// and its decoding allocates a few times the file, not a thousand.
func TestAmplifyingCSVRefusedWithinBoundedMemory(t *testing.T) {
	csv := amplifyingCSV()
	body, contentType := upload(t, csv)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	req, items, err := campaigninput.Decode(contentType, body)
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d-byte upload allocated %d bytes", len(body), allocated)
	if err != nil || req != nil || len(items) != 1 {
		t.Fatalf("Decode accepted %t, problems %v, error %v; want one problem", req != nil, items, err)
	}
	want := validation.Item{Type: "csv_invalid", Loc: []any{"body", "contacts", "line 1"},
		Msg: "line 1: the header row is longer than 65536 bytes: at most 100 variables of names up to 128 characters fit"}
	if got := items[0]; got.Type != want.Type || fmt.Sprint(got.Loc) != fmt.Sprint(want.Loc) || got.Msg != want.Msg ||
		got.Ctx["line"] != 1 {
		t.Errorf("problem = %+v; want %+v with ctx line 1", got, want)
	}
	if limit := uint64(4*len(body) + 1<<20); allocated > limit {
		t.Errorf("decoding a %d-byte upload allocated %d bytes; want at most %d", len(body), allocated, limit)
	}
}

// Each stumble of a CSV file is refused with the line (and column) in the
// item's loc and ctx, and a message that says what to do.
func TestCSVProblemsSayWhere(t *testing.T) {
	names := func(n int) string {
		cols := []string{"to_number"}
		for i := range n {
			cols = append(cols, fmt.Sprintf("v%d", i))
		}
		return strings.Join(cols, ",") + "\n"
	}
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		name, csv string
		typ       string
		loc       []any
		msg       string
	}{
		{"short row", "to_number,customer_name,plan\n+12125550100,Ada,gold\n+12125550101,Grace\n",
			"csv_invalid", []any{"line 3"}, "line 3: the row has 2 fields and the header 3; every row needs one for each column (empty ones too)"},
		{"long row", "to_number,customer_name\n+12125550100,Ada\n+12125550101,\"" + long(100<<10) + "\"\n",
			"csv_invalid", []any{"line 3"}, "line 3: the row is longer than 65536 bytes"},
		{"UTF-16", "\xff\xfet\x00o\x00_\x00n\x00", "csv_invalid", nil, "the file is UTF-16 text"},
		{"Latin-1", "to_number,customer_name\n+12125550100,Jos\xe9\n", "csv_invalid", []any{"line 2", "customer_name"},
			"line 2, column 2: the field is not UTF-8 text (was the file saved as Latin-1 or Windows-1252?)"},
		{"301 variables", names(301) + "+12125550100" + strings.Repeat(",", 301) + "\n", "too_long", []any{"line 1"},
			"line 1: Variables should have at most 100 entries, not 301"},
		{"long name", "to_number," + long(129) + "\n+12125550100,Ada\n", "string_too_long", []any{"line 1", "column 2"},
			"line 1, column 2: Variable names should have at most 128 characters"},
		{"long value", "to_number,note\n+12125550100," + long(2000) + "\n", "string_too_long", []any{"line 2", "note"},
			"line 2, column 2: Variable values should have at most 1024 bytes, not 2000"},
		{"quote", "to_number,note\n+12125550100,a\"b\n", "csv_invalid", []any{"line 2", "column 15"},
			"line 2, column 15: bare \" in non-quoted-field"},
		{"no to_number", "phone,customer_name\n+12125550100,Ada\n", "csv_invalid", nil, "the CSV header has no to_number column"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, contentType := upload(t, []byte(tc.csv))
			_, items, err := campaigninput.Decode(contentType, body)
			if err != nil || len(items) != 1 {
				t.Fatalf("Decode = %v, %v; want one problem", items, err)
			}
			got := items[0]
			loc := append([]any{"body", "contacts"}, tc.loc...)
			if got.Type != tc.typ || fmt.Sprint(got.Loc) != fmt.Sprint(loc) || !strings.HasPrefix(got.Msg, tc.msg) {
				t.Errorf("problem = %s %v %q; want %s %v %q...", got.Type, got.Loc, got.Msg, tc.typ, loc, tc.msg)
			}
		})
	}
}

// The widest file the bounds let through a row at a time (100 variables
// of 128-character names, empty values) is refused once its contacts
// would take more than MaxDecodedBytes, while it is read.
func TestCSVDecodedBytesBounded(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("to_number")
	for i := range 100 {
		fmt.Fprintf(&b, ",%03d%s", i, strings.Repeat("x", 125))
	}
	b.WriteString("\n")
	row := strings.Repeat(",", 100) + "\n"
	for i := range 10_000 {
		fmt.Fprintf(&b, "+1212%07d%s", i, row)
	}
	body, contentType := upload(t, b.Bytes())
	_, items, err := campaigninput.Decode(contentType, body)
	if err != nil || len(items) != 1 || !strings.Contains(items[0].Msg, "once decoded") {
		t.Fatalf("Decode = %v, %v; want the file refused for its decoded size", items, err)
	}
	if line := items[0].Ctx["line"].(int); line < 4000 || line > 6000 {
		t.Errorf("refused at line %d; want where the contacts pass 64 MiB, about line 5,000", line)
	}
}
