package history

import (
	"strconv"
	"strings"
	"time"
)

// pageQuery builds the WHERE clause and arguments of one newest-first page
// of a table keyed by (created_at, id). Only fixed column names enter the
// text; every value is a parameter.
type pageQuery struct {
	args  []any
	where []string
}

func newPageQuery(namespace string) *pageQuery {
	p := &pageQuery{}
	p.where = []string{"namespace = " + p.param(namespace)}
	return p
}

// param adds a value and returns its placeholder.
func (p *pageQuery) param(v any) string {
	p.args = append(p.args, v)
	return "$" + strconv.Itoa(len(p.args))
}

// equal keeps the rows whose column holds value; an empty value does not
// filter.
func (p *pageQuery) equal(column, value string) {
	if value != "" {
		p.where = append(p.where, column+" = "+p.param(value))
	}
}

func (p *pageQuery) add(condition string) { p.where = append(p.where, condition) }

// after keeps the rows that come after (createdAt, id) in newest-first
// order: a row value comparison, so that both databases seek the index
// straight to the cursor instead of filtering rows before it.
func (p *pageQuery) after(idColumn string, createdAt time.Time, id string) {
	p.add("(created_at, " + idColumn + ") < (" + p.param(createdAt.UnixNano()) + ", " + p.param(id) + ")")
}

// sql is the whole statement: columns of table, newest first, limit rows
// (defaultLimit when not positive).
func (p *pageQuery) sql(columns, table, idColumn string, limit int) (string, []any) {
	if limit <= 0 {
		limit = defaultLimit
	}
	return "SELECT " + columns + " FROM " + table + " WHERE " + strings.Join(p.where, " AND ") +
		" ORDER BY created_at DESC, " + idColumn + " DESC LIMIT " + p.param(int64(limit)), p.args
}
