// Package numberlists keeps an in-memory index of every organization's
// do-not-call and block lists, so that creating a call can be refused
// without reading NumberLists from the API server.
//
// An organization is a namespace: every NumberList of a namespace applies to
// every call of that namespace, and to no other.
package numberlists

import (
	"slices"
	"sync"

	"github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Match says why a number may not be called.
type Match struct {
	// Type is the type of the list that matched.
	Type v1alpha1.NumberListType
	// List is the name of the NumberList that matched.
	List string
	// Entry is the number or prefix that matched.
	Entry string
}

// Index holds the NumberLists of every namespace. It is safe for concurrent
// use. The zero value is not usable: call NewIndex.
type Index struct {
	mu   sync.RWMutex
	orgs map[string]*org
}

// org is the index of one namespace.
type org struct {
	lists    map[string]*list  // by NumberList name
	numbers  map[string]owners // exact number -> lists holding it
	prefixes node              // root of the prefix trie
}

// list is one NumberList as it was indexed. Its entries are kept so that a
// replacement or deletion removes exactly what it added.
type list struct {
	name     string
	typ      v1alpha1.NumberListType
	numbers  []string
	prefixes []string
}

// NewIndex returns an empty Index.
func NewIndex() *Index {
	return &Index{orgs: make(map[string]*org)}
}

// Set adds the list namespace/name, or replaces it and all of its old
// entries. The slices are copied, so the caller may reuse them.
//
// Prefixes must match the NumberList schema (+ and digits); others are
// skipped, since they cannot be a prefix of an E.164 number anyway.
func (ix *Index) Set(namespace, name string, listType v1alpha1.NumberListType, numbers, prefixes []string) {
	l := &list{name: name, typ: listType, numbers: slices.Clone(numbers), prefixes: slices.Clone(prefixes)}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	o := ix.orgs[namespace]
	if o == nil {
		o = &org{lists: make(map[string]*list), numbers: make(map[string]owners)}
		ix.orgs[namespace] = o
	}
	if old := o.lists[name]; old != nil {
		o.remove(old)
	}
	o.add(l)
}

// Delete removes the list namespace/name; entries that are also on another
// list of the namespace stay in force.
func (ix *Index) Delete(namespace, name string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	o := ix.orgs[namespace]
	if o == nil || o.lists[name] == nil {
		return
	}
	o.remove(o.lists[name])
	if len(o.lists) == 0 {
		delete(ix.orgs, namespace) // no empty orgs left behind by deleted namespaces
	}
}

// Match reports whether number is on a list of namespace, and which one.
//
// A DoNotCall match wins over a Blocked one, since it is the legal reason
// and must be reported as such. Within a type, an exact number wins over a
// prefix, and a longer prefix over a shorter one; among lists holding the
// same entry, the lexically smallest name is reported. Match takes time
// proportional to len(number), whatever the sizes and number of lists.
func (ix *Index) Match(namespace, number string) (Match, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	o := ix.orgs[namespace]
	if o == nil {
		return Match{}, false
	}
	exact := o.numbers[number]
	dnc, longest := o.prefixes.longest(number)
	switch {
	case exact.doNotCall():
		return exact.match(number), true
	case len(dnc.owners) > 0:
		return dnc.owners.match(dnc.entry), true
	case len(exact) > 0:
		return exact.match(number), true
	case len(longest.owners) > 0:
		return longest.owners.match(longest.entry), true
	}
	return Match{}, false
}

func (o *org) add(l *list) {
	o.lists[l.name] = l
	for _, n := range l.numbers {
		o.numbers[n] = o.numbers[n].with(l)
	}
	for _, p := range l.prefixes {
		o.prefixes.add(p, l)
	}
}

func (o *org) remove(l *list) {
	delete(o.lists, l.name)
	for _, n := range l.numbers {
		if rest := o.numbers[n].without(l); len(rest) > 0 {
			o.numbers[n] = rest
		} else {
			delete(o.numbers, n)
		}
	}
	for _, p := range l.prefixes {
		o.prefixes.remove(p, l)
	}
}
