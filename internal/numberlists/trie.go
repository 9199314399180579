package numberlists

// node is a node of a prefix trie over the bytes '0'-'9' and '+', the
// alphabet of E.164 numbers. A trie makes the longest-prefix search one step
// per byte of the number, however many prefixes there are.
type node struct {
	children [11]*node
	owners   owners // lists holding the prefix that ends here
}

// hit is a prefix that matched: the lists holding it, and the prefix.
type hit struct {
	owners owners
	entry  string
}

// childIndex maps a byte of the alphabet to its child slot.
func childIndex(b byte) (int, bool) {
	switch {
	case b >= '0' && b <= '9':
		return int(b - '0'), true
	case b == '+':
		return 10, true
	}
	return 0, false
}

// valid reports whether p only uses the trie's alphabet.
func valid(p string) bool {
	for i := 0; i < len(p); i++ {
		if _, ok := childIndex(p[i]); !ok {
			return false
		}
	}
	return true
}

// add puts l on prefix p; prefixes outside the alphabet are skipped.
func (n *node) add(p string, l *list) {
	if !valid(p) {
		return
	}
	for i := 0; i < len(p); i++ {
		c, _ := childIndex(p[i])
		if n.children[c] == nil {
			n.children[c] = &node{}
		}
		n = n.children[c]
	}
	n.owners = n.owners.with(l)
}

// remove takes l off prefix p, pruning nodes left empty so that replaced
// lists do not leak memory. It reports whether n itself is now empty.
func (n *node) remove(p string, l *list) bool {
	if p == "" {
		n.owners = n.owners.without(l)
		return n.empty()
	}
	c, ok := childIndex(p[0])
	if !ok || n.children[c] == nil {
		return false
	}
	if n.children[c].remove(p[1:], l) {
		n.children[c] = nil
	}
	return n.empty()
}

func (n *node) empty() bool {
	if len(n.owners) > 0 {
		return false
	}
	for _, c := range n.children {
		if c != nil {
			return false
		}
	}
	return true
}

// longest returns the longest prefix of number held by a DoNotCall list,
// and the longest held by any list; either may be empty.
func (n *node) longest(number string) (dnc, longest hit) {
	for depth := 0; n != nil; depth++ {
		if len(n.owners) > 0 {
			longest = hit{n.owners, number[:depth]}
			if n.owners.doNotCall() {
				dnc = longest
			}
		}
		if depth == len(number) {
			break
		}
		c, ok := childIndex(number[depth])
		if !ok {
			break
		}
		n = n.children[c]
	}
	return dnc, longest
}
