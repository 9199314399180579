package campaigns

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/internal/callinput"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// ContactInput is one contact as sent: an item of a JSON list, or a CSV row.
type ContactInput struct {
	ToNumber, Timezone  string
	Variables, Metadata json.RawMessage
	// Line is the CSV line it came from (1 is the header); 0 in JSON.
	Line int
}

// Invalid is a contact refused, for the validation array: Index is its
// place in the list (from 0), Line its CSV line when it came from a file.
type Invalid struct {
	Index, Line int
	Field, Msg  string
	Input       string
}

// Where says where the contact is, for a person reading the error.
func (v Invalid) Where() string {
	if v.Line > 0 {
		return fmt.Sprintf("line %d", v.Line)
	}
	return fmt.Sprintf("contact %d", v.Index)
}

// maxInvalid bounds the errors reported for one list: a file of 100,000
// bad rows gets the first ones, not a 20 MB answer.
const maxInvalid = 100

// Prepared is a list of contacts ready to store.
type Prepared struct {
	Contacts []history.Contact
	// Duplicates counts the contacts left out because an earlier one had
	// the same number.
	Duplicates int
}

// Prepare validates in, normalizes the numbers (read in region when they
// lack a country code), resolves each contact's time zones and leaves out
// repeated numbers. The contacts are numbered from firstSeq and due at due.
// Reading the numbers is most of an upload's work (libphonenumber's rules
// are regular expressions), so it is spread over the cores.
func Prepare(in []ContactInput, region string, firstSeq int64, due time.Time) (Prepared, []Invalid) {
	checked := checkAll(in, region)
	var p Prepared
	var bad []Invalid
	seen := make(map[string]bool, len(in))
	for i, c := range checked {
		switch {
		case c.problem != nil:
			if len(bad) < maxInvalid {
				v := *c.problem
				v.Index, v.Line = i, in[i].Line
				bad = append(bad, v)
			}
		case seen[c.number]:
			p.Duplicates++
		default:
			seen[c.number] = true
			p.Contacts = append(p.Contacts, history.Contact{Seq: firstSeq + int64(len(p.Contacts)), ToNumber: c.number,
				Zones: c.zones, Variables: in[i].Variables, Metadata: in[i].Metadata, DueAt: due})
		}
	}
	return p, bad
}

// checked is one contact's number and zones, or its problem.
type checked struct {
	number  string
	zones   []string
	problem *Invalid
}

// checkAll checks every contact, in as many goroutines as there are cores.
func checkAll(in []ContactInput, region string) []checked {
	out := make([]checked, len(in))
	workers := max(1, min(runtime.GOMAXPROCS(0), len(in)/1000))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(in); i += workers {
				out[i] = check(in[i], region)
			}
		})
	}
	wg.Wait()
	return out
}

func check(c ContactInput, region string) checked {
	num, number, ok := callinput.ParsePhone(c.ToNumber, region)
	if !ok {
		return checked{problem: &Invalid{Field: "to_number", Msg: callinput.PhoneError("to_number"), Input: c.ToNumber}}
	}
	var zones []string
	var err error
	if tz := strings.TrimSpace(c.Timezone); tz != "" {
		zones, err = ZonesOf(number, tz)
	} else {
		zones, err = zonesOfNumber(num, number)
	}
	if err != nil {
		return checked{problem: &Invalid{Field: "timezone", Msg: "Value error, " + err.Error(), Input: c.Timezone}}
	}
	return checked{number: number, zones: zones}
}

// CSV errors that are the file's, not a row's.
var (
	ErrNoToNumber = errors.New("the CSV header has no to_number column; the columns are to_number, timezone " +
		"(optional) and one per variable")
	ErrTooManyContacts = errors.New("too many contacts")
)

// ReadCSV reads contacts from a CSV file with a header row: to_number,
// optionally timezone, and one column per variable (its value a string).
// More than max rows is ErrTooManyContacts.
func ReadCSV(r io.Reader, max int) ([]ContactInput, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 0 // every row as long as the header
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading the CSV header: %w", err)
	}
	header = trimAll(header)
	numberCol, tzCol := indexOf(header, "to_number"), indexOf(header, "timezone")
	if numberCol < 0 {
		return nil, ErrNoToNumber
	}
	var out []ContactInput
	for {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the CSV: %w", err)
		}
		if len(out) == max {
			return nil, fmt.Errorf("%w: at most %d a campaign upload", ErrTooManyContacts, max)
		}
		line, _ := cr.FieldPos(0)
		out = append(out, csvContact(header, row, numberCol, tzCol, line))
	}
}

func csvContact(header, row []string, numberCol, tzCol, line int) ContactInput {
	c := ContactInput{ToNumber: strings.TrimSpace(row[numberCol]), Line: line}
	if tzCol >= 0 {
		c.Timezone = strings.TrimSpace(row[tzCol])
	}
	vars := make(map[string]string, len(header))
	for i, name := range header {
		if i != numberCol && i != tzCol && name != "" {
			vars[name] = row[i]
		}
	}
	if len(vars) > 0 {
		c.Variables, _ = json.Marshal(vars) // strings always marshal
	}
	return c
}

func trimAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.TrimSpace(strings.TrimPrefix(s, "\ufeff")) // a spreadsheet's byte-order mark
	}
	return out
}

func indexOf(ss []string, s string) int {
	for i, v := range ss {
		if strings.EqualFold(v, s) {
			return i
		}
	}
	return -1
}
