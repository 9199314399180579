package campaigns

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/internal/callinput"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// Bounds of a CSV upload, checked while it is read: a file is refused at
// the first row past one, before the rest is read, so that what one
// upload costs the operator's memory and the history store is bounded
// whatever its shape. Every row becomes a JSON object naming each
// column, so a file of short rows under long column names once grew a
// hundredfold on the way in (a 213 KB file took 216 MB).
const (
	// MaxCSVBytes bounds a file.
	MaxCSVBytes = 32 << 20
	// MaxCSVRowBytes bounds one row as written: a call's variables fit
	// (100 of them, each value at most 1 KiB, in at most 64 KiB as a
	// create-call body).
	MaxCSVRowBytes = 64 << 10
	// MaxDecodedBytes bounds the contacts of one file once decoded: each
	// row's number and variables as stored, the column names repeated in
	// every row. 500,000 contacts with a few short variables take about
	// 40 MB.
	MaxDecodedBytes = 64 << 20
)

// readAhead is how far csv.Reader's buffer reads past the row it parses.
const readAhead = 4096

// CSV errors that are the file's, not a row's.
var (
	ErrNoToNumber = errors.New("the CSV header has no to_number column; the columns are to_number, timezone " +
		"(optional) and one per variable")
	ErrTooManyContacts = errors.New("too many contacts")
	errRowTooLong      = fmt.Errorf("the row is longer than %d bytes", MaxCSVRowBytes)
	errFileTooLarge    = fmt.Errorf("the file is larger than %d bytes", MaxCSVBytes)
)

// CSVError is a file refused where it was read: Line (from 1, the header;
// 0 for the file as a whole) and Column (from 1; 0 for the row) say where,
// Name is the column's header name when known. Item, when set, is the
// problem in the words of POST /v1/calls (a variable's name or value).
type CSVError struct {
	Line, Column int
	Name, Msg    string
	Item         *validation.Item
	// Err is the sentinel it wraps (ErrNoToNumber, ErrTooManyContacts), if any.
	Err error
}

func (e *CSVError) Error() string {
	switch {
	case e.Line == 0:
		return e.Msg
	case e.Column == 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

func (e *CSVError) Unwrap() error { return e.Err }

// ReadCSV reads contacts from a CSV file in UTF-8 with a header row:
// to_number, optionally timezone, and one column per variable (its value a
// string). It stops at the first bound broken (the constants above, max
// rows: ErrTooManyContacts), at a row with another number of fields than
// the header, and at bytes that are not UTF-8; the error is a *CSVError.
func ReadCSV(r io.Reader, max int) ([]ContactInput, error) {
	br := bufio.NewReader(r)
	if err := refuseUTF16(br); err != nil {
		return nil, err
	}
	in := &boundedReader{r: br}
	cr := csv.NewReader(in)
	cr.FieldsPerRecord = -1 // checked here, to say where and how
	cr.ReuseRecord = true
	h, err := readHeader(cr)
	if err != nil {
		return nil, err
	}
	d := &csvDecoder{header: h, max: max}
	for {
		in.rowStart = cr.InputOffset()
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return d.out, nil
		}
		if err != nil {
			return nil, readError(err, d.nextLine())
		}
		line, _ := cr.FieldPos(0)
		if cr.InputOffset()-in.rowStart > MaxCSVRowBytes {
			return nil, &CSVError{Line: line, Msg: errRowTooLong.Error()}
		}
		if err := d.add(row, line); err != nil {
			return nil, err
		}
	}
}

// refuseUTF16 refuses a file that starts with a UTF-16 byte-order mark (a
// spreadsheet's "Unicode text"), which would otherwise be read as a header
// without to_number.
func refuseUTF16(br *bufio.Reader) error {
	start, _ := br.Peek(2)
	if bytes.Equal(start, []byte{0xff, 0xfe}) || bytes.Equal(start, []byte{0xfe, 0xff}) {
		return &CSVError{Msg: "the file is UTF-16 text (it starts with a UTF-16 byte-order mark); " +
			"save it as CSV in UTF-8 (\"CSV UTF-8\" in a spreadsheet) and upload it again"}
	}
	return nil
}

// csvHeader is the header's columns.
type csvHeader struct {
	names            []string
	numberCol, tzCol int
	// namesJSON is each variable column's name as a JSON string and a
	// colon, ready to write; "" for the columns that are not variables.
	namesJSON []string
}

// isVariable: column i names a variable.
func (h *csvHeader) isVariable(i int) bool {
	return i != h.numberCol && i != h.tzCol && h.names[i] != ""
}

func (h *csvHeader) variableCount() int {
	n := 0
	for i := range h.names {
		if h.isVariable(i) {
			n++
		}
	}
	return n
}

func readHeader(cr *csv.Reader) (*csvHeader, error) {
	header, err := cr.Read()
	if err != nil {
		return nil, readError(err, 1)
	}
	h := &csvHeader{names: make([]string, len(header)), namesJSON: make([]string, len(header))}
	for i, s := range header {
		if !utf8.ValidString(s) {
			return nil, notUTF8(1, i+1, "")
		}
		h.names[i] = strings.TrimSpace(strings.TrimPrefix(s, "\ufeff")) // a spreadsheet's byte-order mark
	}
	h.numberCol, h.tzCol = indexOf(h.names, "to_number"), indexOf(h.names, "timezone")
	if h.numberCol < 0 {
		return nil, &CSVError{Msg: ErrNoToNumber.Error(), Err: ErrNoToNumber}
	}
	if n := h.variableCount(); n > callinput.MaxVariables {
		item := callinput.TooManyVariables(nil, n, nil)
		return nil, &CSVError{Line: 1, Msg: item.Msg + " (one column per variable, besides to_number and timezone)",
			Item: &item}
	}
	for i, name := range h.names {
		if !h.isVariable(i) {
			continue
		}
		if item := callinput.VariableNameProblem(nil, name); item != nil {
			return nil, &CSVError{Line: 1, Column: i + 1, Name: name, Msg: item.Msg, Item: item}
		}
		quoted, _ := json.Marshal(name) // valid UTF-8: checked above
		h.namesJSON[i] = string(quoted) + ":"
	}
	return h, nil
}

// csvDecoder turns rows into contacts, keeping count of what they take.
type csvDecoder struct {
	header  *csvHeader
	max     int
	out     []ContactInput
	decoded int
	line    int
	// scratch is the buffer each row's variables are written in.
	scratch []byte
}

func (d *csvDecoder) nextLine() int { return max(2, d.line+1) }

// add decodes one row (line its first line).
func (d *csvDecoder) add(row []string, line int) error {
	d.line = line
	h := d.header
	if len(row) != len(h.names) {
		return &CSVError{Line: line, Msg: fmt.Sprintf("the row has %d fields and the header %d; every row needs "+
			"one for each column (empty ones too)", len(row), len(h.names))}
	}
	if len(d.out) == d.max {
		return &CSVError{Msg: fmt.Sprintf("%s: at most %d a campaign upload", ErrTooManyContacts, d.max), Err: ErrTooManyContacts}
	}
	c := ContactInput{ToNumber: strings.TrimSpace(row[h.numberCol]), Line: line}
	if h.tzCol >= 0 {
		c.Timezone = strings.TrimSpace(row[h.tzCol])
	}
	vars, err := d.variables(row, line)
	if err != nil {
		return err
	}
	c.Variables = vars
	d.decoded += len(c.ToNumber) + len(c.Timezone) + len(vars)
	if d.decoded > MaxDecodedBytes {
		return &CSVError{Line: line, Msg: fmt.Sprintf("the contacts up to this row take more than %d bytes once "+
			"decoded (every row repeats the column names); upload fewer rows at a time, or shorter column names",
			MaxDecodedBytes)}
	}
	d.out = append(d.out, c)
	return nil
}

// variables writes the row's variables as a JSON object of strings, or nil
// when the header has none. The object is built in one buffer reused from
// row to row and kept at its exact size, so that what a file holds once
// decoded is what MaxDecodedBytes counts.
func (d *csvDecoder) variables(row []string, line int) (json.RawMessage, error) {
	b := d.scratch[:0]
	for i, value := range row {
		if !utf8.ValidString(value) {
			return nil, notUTF8(line, i+1, d.header.names[i])
		}
		name := d.header.namesJSON[i]
		if name == "" {
			continue
		}
		if len(value) > callinput.MaxVariableValueBytes { // a string's size is its bytes
			quoted, _ := json.Marshal(value)
			item := callinput.VariableValueProblem(nil, quoted)
			return nil, &CSVError{Line: line, Column: i + 1, Name: d.header.names[i], Msg: item.Msg, Item: item}
		}
		if len(b) == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = append(b, name...)
		b = appendJSONString(b, value)
	}
	d.scratch = b
	if len(b) == 0 {
		return nil, nil
	}
	return bytes.Clone(append(b, '}')), nil
}

// appendJSONString appends s as a JSON string; an empty one, the common
// cell, without an allocation.
func appendJSONString(b []byte, s string) []byte {
	if s == "" {
		return append(b, '"', '"')
	}
	quoted, _ := json.Marshal(s) // valid UTF-8: checked by the caller
	return append(b, quoted...)
}

func notUTF8(line, column int, name string) *CSVError {
	return &CSVError{Line: line, Column: column, Name: name, Msg: "the field is not UTF-8 text (was the file saved as " +
		"Latin-1 or Windows-1252?); save it as CSV in UTF-8 (\"CSV UTF-8\" in a spreadsheet) and upload it again"}
}

// readError is the CSVError of csv.Reader's error, at line when it does
// not say.
func readError(err error, line int) error {
	var pe *csv.ParseError
	switch {
	case errors.Is(err, errRowTooLong) && line == 1:
		return &CSVError{Line: line, Msg: fmt.Sprintf("the header row is longer than %d bytes: at most %d variables "+
			"of names up to %d characters fit", MaxCSVRowBytes, callinput.MaxVariables, callinput.MaxVariableNameChars)}
	case errors.Is(err, errRowTooLong):
		return &CSVError{Line: line, Msg: errRowTooLong.Error()}
	case errors.Is(err, errFileTooLarge):
		return &CSVError{Msg: errFileTooLarge.Error()}
	case errors.As(err, &pe):
		return &CSVError{Line: pe.Line, Column: pe.Column, Msg: pe.Err.Error()}
	}
	return &CSVError{Line: line, Msg: "the file could not be read: " + err.Error()}
}

// boundedReader hands csv.Reader at most MaxCSVBytes, and at most
// MaxCSVRowBytes (and its read-ahead) past the start of the row it is
// reading, so that a row without end is refused when it passes the bound,
// not once it has been read whole.
type boundedReader struct {
	r        io.Reader
	read     int64
	rowStart int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	rowLeft := b.rowStart + MaxCSVRowBytes + readAhead - b.read
	fileLeft := MaxCSVBytes - b.read
	switch {
	case fileLeft <= 0:
		return b.pastBound(errFileTooLarge)
	case rowLeft <= 0:
		return b.pastBound(errRowTooLong)
	}
	p = p[:min(int64(len(p)), rowLeft, fileLeft)]
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

// pastBound is the error of a read past a bound, or EOF when the input
// ends exactly there.
func (b *boundedReader) pastBound(err error) (int, error) {
	var one [1]byte
	if n, _ := io.ReadFull(b.r, one[:]); n == 0 {
		return 0, io.EOF
	}
	return 0, err
}

func indexOf(ss []string, s string) int {
	for i, v := range ss {
		if strings.EqualFold(v, s) {
			return i
		}
	}
	return -1
}
