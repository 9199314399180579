package numberlists

import (
	"slices"
	"strings"

	"github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// owners are the lists holding one entry, sorted DoNotCall first, then by
// name, so that owners[0] is the list Match reports. This is the per-type
// reference count: an entry stays in force while any list holds it.
// Usually it has a single element, which keeps 100,000-number lists small.
type owners []*list

// with returns o plus l; adding a list twice is a no-op, so duplicate
// entries within a list need no special care.
func (o owners) with(l *list) owners {
	i, found := slices.BinarySearchFunc(o, l, compareLists)
	if found {
		return o
	}
	return slices.Insert(o, i, l)
}

// without returns o minus l; removing an absent list is a no-op.
func (o owners) without(l *list) owners {
	i, found := slices.BinarySearchFunc(o, l, compareLists)
	if !found || o[i] != l {
		return o
	}
	return slices.Delete(o, i, i+1)
}

func (o owners) doNotCall() bool {
	return len(o) > 0 && o[0].typ == v1alpha1.DoNotCall
}

// match describes o[0] matching entry; o must not be empty.
func (o owners) match(entry string) Match {
	return Match{Type: o[0].typ, List: o[0].name, Entry: entry}
}

// compareLists orders DoNotCall before any other type, then by name. Names
// are unique within a namespace, so this is a total order.
func compareLists(a, b *list) int {
	if ra, rb := rank(a.typ), rank(b.typ); ra != rb {
		return ra - rb
	}
	return strings.Compare(a.name, b.name)
}

// rank puts DoNotCall first; unknown types rank as Blocked, so they still
// block calls.
func rank(t v1alpha1.NumberListType) int {
	if t == v1alpha1.DoNotCall {
		return 0
	}
	return 1
}
