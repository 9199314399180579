// Package docs checks the project's Markdown: the README is an index and
// the reference, operations and development guides live in folder READMEs
// (api/, config/, hack/), so a link between them that breaks is a reader
// lost. Links to the web are not followed (the tests run offline).
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is two folders up from hack/docs.
const repoRoot = "../.."

// skipDirs hold Markdown that is not the project's.
var skipDirs = map[string]bool{".git": true, "node_modules": true, "bin": true, ".dev": true, "dist": true}

func TestMarkdownLinks(t *testing.T) {
	files := markdownFiles(t)
	if len(files) < 4 {
		t.Fatalf("found %d Markdown files, want at least README.md, api/, config/ and hack/README.md", len(files))
	}
	anchors := map[string]map[string]bool{}
	for _, f := range files {
		anchors[f] = headingAnchors(read(t, f))
	}
	for _, f := range files {
		for _, target := range links(read(t, f)) {
			if problem := check(f, target, anchors); problem != "" {
				t.Errorf("%s: link %q: %s", rel(f), target, problem)
			}
		}
	}
}

// The folder READMEs are there and the index links to each.
func TestREADMEIsAnIndex(t *testing.T) {
	index := read(t, filepath.Join(repoRoot, "README.md"))
	for _, guide := range []string{"api/README.md", "config/README.md", "hack/README.md"} {
		if _, err := os.Stat(filepath.Join(repoRoot, guide)); err != nil {
			t.Errorf("%s: %v", guide, err)
		}
		if !strings.Contains(index, "]("+guide) {
			t.Errorf("README.md does not link to %s", guide)
		}
	}
	if n := strings.Count(index, "\n"); n > 200 {
		t.Errorf("README.md has %d lines: it is the front page, keep the reference in the folder READMEs", n)
	}
}

func check(from, target string, anchors map[string]map[string]bool) string {
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	file := from
	if path != "" {
		file = filepath.Join(filepath.Dir(from), path)
		if _, err := os.Stat(file); err != nil {
			return "no such file"
		}
	}
	if anchor == "" {
		return ""
	}
	heads, ok := anchors[file]
	if !ok {
		return "" // an anchor into a file that is not Markdown (a line of code)
	}
	if !heads[anchor] {
		return "no heading with anchor #" + anchor + " in " + rel(file)
	}
	return ""
}

func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && skipDirs[d.Name()] {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			files = append(files, filepath.Clean(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	linkPattern    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingPattern = regexp.MustCompile(`^#{1,6} (.+)$`)
	codeSpan       = regexp.MustCompile("`[^`]*`")
)

// links are the targets of the Markdown links outside code blocks and spans.
func links(text string) []string {
	var out []string
	forEachProseLine(text, func(line string) {
		for _, m := range linkPattern.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			out = append(out, m[1])
		}
	})
	return out
}

// headingAnchors are the anchors GitHub gives the headings of text.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	forEachProseLine(text, func(line string) {
		if m := headingPattern.FindStringSubmatch(line); m != nil {
			out[slug(m[1])] = true
		}
	})
	return out
}

// slug is GitHub's heading anchor: lower case, punctuation but hyphens
// dropped, spaces to hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func forEachProseLine(text string, f func(string)) {
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			f(line)
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func rel(path string) string {
	r, err := filepath.Rel(repoRoot, path)
	if err != nil {
		return path
	}
	return r
}
