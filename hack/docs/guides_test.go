package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every benchmark target of the Makefile is listed, with what it measures,
// on the benchmarks page, which hack/README.md links to.
func TestBenchmarksPageListsEveryTarget(t *testing.T) {
	page := read(t, filepath.Join(repoRoot, "hack", "benchmarks.md"))
	targets := regexp.MustCompile(`(?m)^(bench[\w-]*):`).FindAllStringSubmatch(read(t, filepath.Join(repoRoot, "Makefile")), -1)
	if len(targets) == 0 {
		t.Fatal("the Makefile has no bench targets")
	}
	for _, m := range targets {
		if !strings.Contains(page, "| `make "+m[1]+"` |") {
			t.Errorf("hack/benchmarks.md does not list `make %s` in its table of targets", m[1])
		}
	}
	if !strings.Contains(read(t, filepath.Join(repoRoot, "hack", "README.md")), "](benchmarks.md") {
		t.Error("hack/README.md does not link to benchmarks.md")
	}
}

// The development guide's package table names every package directly under
// internal/, so a reader finds a concern there by its folder.
func TestPackagesTableNamesEveryPackage(t *testing.T) {
	guide := read(t, filepath.Join(repoRoot, "hack", "README.md"))
	_, table, ok := strings.Cut(guide, "\n### Packages\n")
	if !ok {
		t.Fatal(`hack/README.md has no section "### Packages"`)
	}
	table, _, _ = strings.Cut(table, "\n### ")
	entries, err := os.ReadDir(filepath.Join(repoRoot, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if !strings.Contains(table, "`internal/"+e.Name()+"`") && !strings.Contains(table, "`"+e.Name()+"`") {
			t.Errorf("hack/README.md's package table does not name internal/%s", e.Name())
		}
	}
}

// A path the guides name in code (`internal/phone`, `controllers/doc.go`)
// exists, so a package that moves takes its mentions with it.
func TestNamedPathsExist(t *testing.T) {
	path := regexp.MustCompile("`((?:internal|controllers|cmd|hack|api|config)/[A-Za-z0-9_./-]*)")
	for _, f := range markdownFiles(t) {
		for _, m := range path.FindAllStringSubmatch(read(t, f), -1) {
			name := strings.TrimSuffix(m[1], ".")
			if i := strings.LastIndex(name, "."); i > strings.LastIndex(name, "/") && i+1 < len(name) &&
				name[i+1] >= 'A' && name[i+1] <= 'Z' {
				name = name[:i] // a Go name in its package: internal/analysis.Analyzer
			}
			if _, err := os.Stat(filepath.Join(repoRoot, name)); err != nil {
				t.Errorf("%s names %s, which does not exist", rel(f), name)
			}
		}
	}
}
