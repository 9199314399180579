package campaigns

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A cached copy older than this process's write is stale until the cache
// catches up or the memory expires; a campaign created and not cached yet
// is missing from a list; the memory stays bounded.
func TestWritesRememberWhatTheCacheLacks(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	key := types.NamespacedName{Namespace: "org", Name: "campaign-a"}
	var w writes
	w.remember(key, 3, now)
	if !w.stale(key, 2, now) {
		t.Error("a copy at generation 2 after a write at 3 is not stale")
	}
	if w.stale(key, 3, now) || w.stale(key, 2, now) {
		t.Error("once the cache had generation 3, an older copy still counts as stale (the write is forgotten)")
	}
	w.remember(key, 4, now)
	if got := w.missing("org", map[string]bool{}, now); len(got) != 1 || got[0] != key {
		t.Errorf("missing = %v, want %v", got, key)
	}
	if got := w.missing("org", map[string]bool{"campaign-a": true}, now); len(got) != 0 {
		t.Errorf("a listed campaign is missing: %v", got)
	}
	if w.stale(key, 1, now.Add(writeMemory+time.Second)) {
		t.Error("a write is remembered past writeMemory")
	}
	for i := range maxWrites + 10 {
		w.remember(types.NamespacedName{Namespace: "org", Name: string(rune('a'+i%26)) + time.Duration(i).String()}, 1,
			now.Add(time.Duration(i)*time.Millisecond))
	}
	if len(w.gens) > maxWrites {
		t.Errorf("%d writes remembered, want at most %d", len(w.gens), maxWrites)
	}
}
