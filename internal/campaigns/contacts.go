package campaigns

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/internal/callinput"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/phone"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// ContactInput is one contact as sent: an item of a JSON list, or a CSV row.
type ContactInput struct {
	ToNumber, Timezone  string
	Variables, Metadata json.RawMessage
	// Line is the CSV line it came from (1 is the header); 0 in JSON.
	Line int
}

// Invalid is a contact refused, for the validation array: Index is its
// place in the list (from 0; -1 when the list as a whole is refused), Line
// its CSV line when it came from a file. The Item's Loc is within the
// contact: ["to_number"], ["variables", "customer_name"].
type Invalid struct {
	Index, Line int
	validation.Item
}

// Where says where the contact is, for a person reading the error.
func (v Invalid) Where() string {
	switch {
	case v.Line > 0:
		return fmt.Sprintf("line %d", v.Line)
	case v.Index < 0:
		return "the contacts"
	}
	return fmt.Sprintf("contact %d", v.Index)
}

// Path is the Item's Loc as text: variables.customer_name.
func (v Invalid) Path() string {
	parts := make([]string, len(v.Loc))
	for i, p := range v.Loc {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
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
	num, number, ok := phone.Parse(c.ToNumber, region)
	if !ok {
		return problem(validation.Item{Type: "value_error", Loc: []any{"to_number"},
			Msg: phone.Invalid("to_number"), Input: c.ToNumber})
	}
	var zones []string
	var err error
	if tz := strings.TrimSpace(c.Timezone); tz != "" {
		zones, err = ZonesOf(number, tz)
	} else {
		zones, err = zonesOfNumber(num, number)
	}
	if err != nil {
		return problem(validation.Item{Type: "value_error", Loc: []any{"timezone"}, Msg: "Value error, " + err.Error(),
			Input: c.Timezone})
	}
	// The limits of POST /v1/calls, in its words: a contact over them
	// would fail, or be retried, every time it is dialed.
	if items := callinput.VariablesProblems(c.Variables, []any{"variables"}); len(items) > 0 {
		return problem(items[0])
	}
	if items := callinput.MetadataProblems(c.Metadata, []any{"metadata"}); len(items) > 0 {
		return problem(items[0])
	}
	return checked{number: number, zones: zones}
}

func problem(item validation.Item) checked {
	return checked{problem: &Invalid{Item: item}}
}
