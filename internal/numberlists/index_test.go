package numberlists

import (
	"fmt"
	"testing"

	"github.com/switchboard-dev/switchboard/api/v1alpha1"
)

const (
	dnc     = v1alpha1.DoNotCall
	blocked = v1alpha1.Blocked
)

// op is one change to an Index: a Set, or a Delete when del is true.
type op struct {
	ns, name string
	typ      v1alpha1.NumberListType
	numbers  []string
	prefixes []string
	del      bool
}

type query struct {
	ns, number string
	want       Match
	ok         bool
}

func apply(ix *Index, ops []op) {
	for _, o := range ops {
		if o.del {
			ix.Delete(o.ns, o.name)
		} else {
			ix.Set(o.ns, o.name, o.typ, o.numbers, o.prefixes)
		}
	}
}

func TestMatch(t *testing.T) {
	const num = "+14155550123"
	tests := []struct {
		name    string
		ops     []op
		queries []query
	}{
		{
			name:    "empty index",
			queries: []query{{ns: "acme", number: num}},
		},
		{
			name: "exact",
			ops:  []op{{ns: "acme", name: "dnc", typ: dnc, numbers: []string{num}}},
			queries: []query{
				{ns: "acme", number: num, want: Match{dnc, "dnc", num}, ok: true},
				{ns: "acme", number: "+14155550124"},
				{ns: "acme", number: "+1415555012"}, // a number is not a prefix
			},
		},
		{
			name: "prefix",
			ops:  []op{{ns: "acme", name: "premium", typ: blocked, prefixes: []string{"+1900"}}},
			queries: []query{
				{ns: "acme", number: "+19005550100", want: Match{blocked, "premium", "+1900"}, ok: true},
				{ns: "acme", number: "+1900", want: Match{blocked, "premium", "+1900"}, ok: true},
				{ns: "acme", number: "+190"},
				{ns: "acme", number: num},
			},
		},
		{
			name: "longest prefix wins",
			ops: []op{
				{ns: "acme", name: "a", typ: blocked, prefixes: []string{"+1", "+1415555"}},
				{ns: "acme", name: "b", typ: blocked, prefixes: []string{"+1415"}},
			},
			queries: []query{
				{ns: "acme", number: num, want: Match{blocked, "a", "+1415555"}, ok: true},
				{ns: "acme", number: "+14155", want: Match{blocked, "b", "+1415"}, ok: true},
				{ns: "acme", number: "+12125550100", want: Match{blocked, "a", "+1"}, ok: true},
			},
		},
		{
			name: "exact wins over prefix of the same type",
			ops: []op{
				{ns: "acme", name: "a", typ: blocked, prefixes: []string{"+1415"}},
				{ns: "acme", name: "b", typ: blocked, numbers: []string{num}},
			},
			queries: []query{{ns: "acme", number: num, want: Match{blocked, "b", num}, ok: true}},
		},
		{
			name: "DoNotCall wins over Blocked",
			ops: []op{
				{ns: "acme", name: "a-blocked", typ: blocked, numbers: []string{num}, prefixes: []string{"+1212555"}},
				{ns: "acme", name: "z-dnc", typ: dnc, numbers: []string{num}, prefixes: []string{"+1212"}},
			},
			queries: []query{
				{ns: "acme", number: num, want: Match{dnc, "z-dnc", num}, ok: true},
				// A DoNotCall prefix beats a longer Blocked prefix.
				{ns: "acme", number: "+12125550100", want: Match{dnc, "z-dnc", "+1212"}, ok: true},
			},
		},
		{
			name: "DoNotCall prefix wins over Blocked exact",
			ops: []op{
				{ns: "acme", name: "blocked", typ: blocked, numbers: []string{num}},
				{ns: "acme", name: "dnc", typ: dnc, prefixes: []string{"+1415"}},
			},
			queries: []query{{ns: "acme", number: num, want: Match{dnc, "dnc", "+1415"}, ok: true}},
		},
		{
			name: "same type on several lists reports the smallest name",
			ops: []op{
				{ns: "acme", name: "c", typ: dnc, numbers: []string{num}},
				{ns: "acme", name: "a", typ: dnc, numbers: []string{num}},
				{ns: "acme", name: "b", typ: dnc, numbers: []string{num}},
			},
			queries: []query{{ns: "acme", number: num, want: Match{dnc, "a", num}, ok: true}},
		},
		{
			name: "replace removes old entries",
			ops: []op{
				{ns: "acme", name: "l", typ: dnc, numbers: []string{num, "+442071838750"}, prefixes: []string{"+1900"}},
				{ns: "acme", name: "l", typ: blocked, numbers: []string{"+33142685300"}},
			},
			queries: []query{
				{ns: "acme", number: num},
				{ns: "acme", number: "+442071838750"},
				{ns: "acme", number: "+19005550100"},
				{ns: "acme", number: "+33142685300", want: Match{blocked, "l", "+33142685300"}, ok: true},
			},
		},
		{
			name: "replace with duplicate entries",
			ops: []op{
				{ns: "acme", name: "l", typ: dnc, numbers: []string{num, num}, prefixes: []string{"+1900", "+1900"}},
				{ns: "acme", name: "l", typ: dnc, numbers: []string{"+33142685300"}},
			},
			queries: []query{
				{ns: "acme", number: num},
				{ns: "acme", number: "+19005550100"},
			},
		},
		{
			name: "delete keeps entries of another list",
			ops: []op{
				{ns: "acme", name: "a", typ: dnc, numbers: []string{num, "+442071838750"}, prefixes: []string{"+1900"}},
				{ns: "acme", name: "b", typ: dnc, numbers: []string{num}, prefixes: []string{"+1900"}},
				{ns: "acme", name: "a", del: true},
			},
			queries: []query{
				{ns: "acme", number: num, want: Match{dnc, "b", num}, ok: true},
				{ns: "acme", number: "+19005550100", want: Match{dnc, "b", "+1900"}, ok: true},
				{ns: "acme", number: "+442071838750"},
			},
		},
		{
			name: "delete of a DoNotCall list falls back to Blocked",
			ops: []op{
				{ns: "acme", name: "dnc", typ: dnc, numbers: []string{num}},
				{ns: "acme", name: "blocked", typ: blocked, numbers: []string{num}},
				{ns: "acme", name: "dnc", del: true},
				{ns: "acme", name: "missing", del: true},
				{ns: "other", name: "dnc", del: true},
			},
			queries: []query{{ns: "acme", number: num, want: Match{blocked, "blocked", num}, ok: true}},
		},
		{
			name: "namespace isolation",
			ops: []op{
				{ns: "acme", name: "l", typ: dnc, numbers: []string{num}, prefixes: []string{"+1900"}},
				{ns: "globex", name: "l", typ: blocked, numbers: []string{"+33142685300"}},
			},
			queries: []query{
				{ns: "globex", number: num},
				{ns: "globex", number: "+19005550100"},
				{ns: "acme", number: "+33142685300"},
				{ns: "globex", number: "+33142685300", want: Match{blocked, "l", "+33142685300"}, ok: true},
			},
		},
		{
			name: "prefixes outside the alphabet are skipped",
			ops:  []op{{ns: "acme", name: "l", typ: blocked, prefixes: []string{"+1 900", "+1x"}}},
			queries: []query{
				{ns: "acme", number: "+1 9005550100"},
				{ns: "acme", number: "+1x"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := NewIndex()
			apply(ix, tt.ops)
			for _, q := range tt.queries {
				got, ok := ix.Match(q.ns, q.number)
				if got != q.want || ok != q.ok {
					t.Errorf("Match(%q, %q) = %+v, %v; want %+v, %v", q.ns, q.number, got, ok, q.want, q.ok)
				}
			}
		})
	}
}

// TestDeleteFreesMemory checks that deleting every list leaves nothing behind.
func TestDeleteFreesMemory(t *testing.T) {
	ix := NewIndex()
	ix.Set("acme", "a", dnc, []string{"+14155550123"}, []string{"+1900", "+19005"})
	ix.Set("acme", "b", blocked, []string{"+14155550123"}, []string{"+1900"})
	ix.Set("acme", "a", dnc, nil, []string{"+44"})
	ix.Delete("acme", "b")
	o := ix.orgs["acme"]
	if len(o.numbers) != 0 || o.prefixes.children[10].children[1] != nil {
		t.Errorf("replaced and deleted entries left behind: numbers %v", o.numbers)
	}
	ix.Delete("acme", "a")
	if len(ix.orgs) != 0 || !o.prefixes.empty() {
		t.Errorf("orgs = %v after deleting every list", ix.orgs)
	}
}

// TestSetCopies checks that the caller may reuse its slices.
func TestSetCopies(t *testing.T) {
	ix := NewIndex()
	numbers := []string{"+14155550123"}
	ix.Set("acme", "a", dnc, numbers, nil)
	numbers[0] = "+33142685300"
	ix.Delete("acme", "a")
	ix.Set("acme", "b", dnc, []string{"+14155550123"}, nil)
	if _, ok := ix.Match("acme", "+14155550123"); !ok {
		t.Error("number of list b not matched")
	}
}

// Lists changing in an organization never disturb a list nobody touches,
// nor match a number no list ever held, and the index ends as its last
// change left it (run with -race: make test does).
func TestConcurrentUse(t *testing.T) {
	ix := NewIndex()
	ix.Set("acme", "stable", dnc, []string{"+14155559999"}, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			ix.Set("acme", fmt.Sprint("l", i%3), dnc, []string{fmt.Sprint("+1415555", i)}, []string{"+1900"})
			ix.Delete("acme", fmt.Sprint("l", (i+1)%3))
		}
	}()
	for range 1000 {
		ix.Match("acme", "+19005550100")
		if m, ok := ix.Match("acme", "+14155559999"); !ok || m.List != "stable" {
			t.Fatalf("untouched list during changes: %+v %v, want stable", m, ok)
		}
		if m, ok := ix.Match("acme", "+442071234567"); ok {
			t.Fatalf("a number no list holds matched %+v", m)
		}
	}
	<-done
	// The last change set l1 (199 % 3, with +1415555199) and deleted l2.
	if m, ok := ix.Match("acme", "+1415555199"); !ok || m.List != "l1" {
		t.Fatalf("after the changes: %+v %v, want l1", m, ok)
	}
	if m, ok := ix.Match("acme", "+1415555197"); ok {
		t.Fatalf("a number of a deleted list matched %+v", m)
	}
}

// numbers returns n distinct E.164 numbers; seeds give disjoint sets.
func numbers(n, seed int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("+1%03d%07d", 200+seed, i)
	}
	return out
}

// prefixes returns n distinct 7-character prefixes.
func prefixes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("+44%04d", i)
	}
	return out
}

func BenchmarkMatch100k(b *testing.B) {
	ix := NewIndex()
	nums := numbers(100_000, 0)
	ix.Set("acme", "big", dnc, nums, prefixes(1_000))
	for _, bc := range []struct{ name, number string }{
		{"hit", nums[54_321]},
		{"prefix-hit", "+4400991234567"},
		{"miss", "+33142685300"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ix.Match("acme", bc.number)
			}
		})
	}
}

func BenchmarkSet100k(b *testing.B) {
	ix := NewIndex()
	lists := [][]string{numbers(100_000, 0), numbers(100_000, 1)}
	ix.Set("acme", "big", dnc, lists[0], nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		ix.Set("acme", "big", dnc, lists[i%2], nil)
	}
}
