package main

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/app"
)

// README.md's architecture section names the process's runnables, where
// each runs, in the order of the table that declares them
// (internal/app/process.go): a runnable added, removed, renamed or moved
// to the leader fails here until the README says so.
func TestREADMEListsTheRunnables(t *testing.T) {
	readme := read(t, filepath.Join("..", "..", "README.md"))
	_, section, ok := strings.Cut(readme, "\n## Architecture\n")
	if !ok {
		t.Fatal("README.md has no Architecture section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	section = strings.Join(strings.Fields(section), " ")
	names := regexp.MustCompile("`([a-z][a-z-]*)`")
	listed := func(from, to string) []string {
		_, rest, ok := strings.Cut(section, from)
		if !ok {
			t.Fatalf("README.md's architecture section does not say %q", from)
		}
		rest, _, _ = strings.Cut(rest, to)
		var out []string
		for _, m := range names.FindAllStringSubmatch(rest, -1) {
			out = append(out, m[1])
		}
		return out
	}
	readmeSays := map[string][]string{
		"every replica": listed("it runs ", ". The leader"),
		"leader":        listed("The leader alone runs ", " ([replicas]"),
	}
	table := map[string][]string{}
	for _, r := range app.RunnableNames() {
		table[r[1]] = append(table[r[1]], r[0])
	}
	for where, names := range table {
		if !slices.Equal(readmeSays[where], names) {
			t.Errorf("README.md lists on %s:\n  %v\nthe runnables table (internal/app/process.go):\n  %v", where, readmeSays[where], names)
		}
	}
	if len(table) != len(readmeSays) {
		t.Errorf("the table places runnables on %v, the README on every replica and the leader", table)
	}
}
