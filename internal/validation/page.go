package validation

import (
	"net/url"
	"strconv"
	"strings"
)

// Page is the limit and cursor of a list request.
type Page struct {
	Limit  int
	Cursor string
}

// DecodePage reads a list's limit (1..maxSize, defaultSize when absent)
// and cursor, which valid must accept; pattern is what a cursor looks
// like, as the problem quotes it.
func DecodePage(q url.Values, defaultSize, maxSize int, valid func(string) bool, pattern string) (Page, []Item) {
	var p Problems
	page := Page{Limit: defaultSize}
	if q.Has("limit") {
		s := q.Get("limit")
		n, err := strconv.Atoi(strings.TrimSpace(s))
		loc := []any{"query", "limit"}
		switch {
		case err != nil:
			p.Fail("int_parsing", loc, "Input should be a valid integer, unable to parse string as an integer", s, nil)
		case n < 1:
			p.Fail("greater_than_equal", loc, "Input should be greater than or equal to 1", s, map[string]any{"ge": 1})
		case n > maxSize:
			p.Fail("less_than_equal", loc, "Input should be less than or equal to "+strconv.Itoa(maxSize), s,
				map[string]any{"le": maxSize})
		default:
			page.Limit = n
		}
	}
	if q.Has("cursor") {
		page.Cursor = q.Get("cursor")
		if !valid(page.Cursor) {
			p.Fail("string_pattern_mismatch", []any{"query", "cursor"}, "String should match pattern '"+pattern+"'",
				page.Cursor, map[string]any{"pattern": pattern})
		}
	}
	return page, p
}
