package callinput

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/switchboard-dev/switchboard/internal/validation"
)

// checkJSON walks a valid JSON value stored for the caller and returns the
// first of what would make it unfaithful or unbounded: a key twice in an
// object, a number beyond a float64 (which the Kubernetes API server cannot
// store: 1e400 used to fail the create with a 503), or objects and arrays
// nested deeper than MaxJSONDepth. loc is the value's location.
func checkJSON(raw []byte, loc []any) *validation.Item {
	w := &jsonWalker{dec: json.NewDecoder(bytes.NewReader(raw)), raw: raw, path: slices.Clone(loc)}
	w.dec.UseNumber()
	return w.value(0)
}

type jsonWalker struct {
	dec  *json.Decoder
	raw  []byte
	path []any
}

// value checks the next value, found inside depth levels of nesting.
func (w *jsonWalker) value(depth int) *validation.Item {
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err != nil {
		item := validation.JSONInvalid(err) // cannot happen: the body parsed
		return &item
	}
	switch t := tok.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(string(t), 64); err != nil {
			return &validation.Item{Type: "finite_number", Loc: slices.Clone(w.path), Input: string(t),
				Msg: "Input should be a finite number: this one is beyond a 64-bit float (about ±1.8e308); send it as a string"}
		}
	case json.Delim:
		if depth+1 > MaxJSONDepth {
			return &validation.Item{Type: "too_deep", Loc: slices.Clone(w.path), Input: w.valueFrom(start),
				Msg: fmt.Sprintf("Objects and arrays should nest at most %d levels deep here", MaxJSONDepth),
				Ctx: map[string]any{"max_depth": MaxJSONDepth}}
		}
		seen := map[string]bool{}
		for i := 0; w.dec.More(); i++ {
			var step any = i
			if t == '{' {
				keyTok, _ := w.dec.Token()
				key, _ := keyTok.(string)
				if seen[key] {
					item := validation.DuplicateKey(append(slices.Clone(w.path), key), key)
					return &item
				}
				seen[key] = true
				step = key
			}
			w.path = append(w.path, step)
			if item := w.value(depth + 1); item != nil {
				return item
			}
			w.path = w.path[:len(w.path)-1]
		}
		_, _ = w.dec.Token() // the closing delimiter
	}
	return nil
}

// valueFrom decodes, as an item's input, the value that starts after
// offset (past the separators between it and the token before).
func (w *jsonWalker) valueFrom(offset int64) any {
	rest := bytes.TrimLeft(w.raw[offset:], " \t\r\n,:")
	var v json.RawMessage
	if json.NewDecoder(bytes.NewReader(rest)).Decode(&v) != nil {
		return nil
	}
	return validation.Input(v)
}
