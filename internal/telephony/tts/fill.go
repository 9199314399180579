package tts

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
)

// placeholder is {{name}}, with optional whitespace inside the braces.
var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// Fill replaces each {{name}} placeholder of text with the variable's
// value: strings as they are, numbers in plain decimal (3, 2.5, never
// 3e+00), booleans as true or false, anything else as fmt prints it. A
// missing or null variable becomes the empty string: the agent then says
// the sentence without it rather than reading out braces. Text that is not
// a placeholder (a lone brace, {{ not a name }}) stays as it is.
func Fill(text string, vars map[string]any) string {
	return placeholder.ReplaceAllStringFunc(text, func(m string) string {
		name := placeholder.FindStringSubmatch(m)[1]
		return format(vars[name])
	})
}

func format(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 32)
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	default:
		return fmt.Sprint(v)
	}
}

// Placeholders lists the names of text's placeholders, each once, in the
// order they first appear.
func Placeholders(text string) []string {
	var names []string
	for _, m := range placeholder.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return names
}
