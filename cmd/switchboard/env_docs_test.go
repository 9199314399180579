package main

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Environment variables the code does not read itself, yet the
// manifests set or the READMEs name: each says who reads it.
var readElsewhere = map[string]string{
	"GOMEMLIMIT":  "the Go runtime",
	"PGPASSWORD":  "pgx, the PostgreSQL driver (libpq's convention)",
	"KUBECONFIG":  "client-go, through controller-runtime's GetConfig",
	"CGO_ENABLED": "the go command (a build setting)",
}

// readByTests are variables the READMEs document for running the tests.
var readByTests = map[string]string{
	"SWITCHBOARD_CHROMIUM": "the dashboard's browser tests",
}

// Every environment variable that --help, the READMEs, config/ (kustomize)
// or the Helm chart name is read by the code: a promise such as "SIP binds
// to env POD_IP" must not outlive the code that kept it (it once did, when
// the flags moved). A variable set in a manifest only to be expanded in
// its args ($(NODE_NAME)) is read by the kubelet, which is fine.
func TestDocumentedEnvironmentIsRead(t *testing.T) {
	root := filepath.Join("..", "..")
	documented := map[string][]string{} // name: where
	note := func(name, where string) { documented[name] = append(documented[name], where) }

	// --help.
	o := defaultOptions()
	flags := flag.NewFlagSet("switchboard", flag.ContinueOnError)
	o.bindFlags(flags)
	envInText := regexp.MustCompile("\\b[Ee]nv(?:ironment variables?)? `?([A-Z][A-Z0-9_]{2,})")
	flags.VisitAll(func(f *flag.Flag) {
		for _, m := range envInText.FindAllStringSubmatch(f.Usage, -1) {
			note(m[1], "--"+f.Name)
		}
	})
	// The READMEs: "env NAME", and names in backticks that look like one.
	backticked := regexp.MustCompile("`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?:=[^`]*)?`")
	for _, doc := range []string{"README.md", "api/README.md", "config/README.md", "config/helm/switchboard/README.md"} {
		text := read(t, filepath.Join(root, doc))
		for _, re := range []*regexp.Regexp{envInText, backticked} {
			for _, m := range re.FindAllStringSubmatch(text, -1) {
				note(m[1], doc)
			}
		}
	}
	// The manifests' env entries (names in capitals are environment
	// variables there), and what their args expand.
	envEntry := regexp.MustCompile(`(?m)^\s*-?\s*name:\s*([A-Z][A-Z0-9_]+)\s*$`)
	expanded := map[string]bool{}
	walk(t, filepath.Join(root, "config"), func(path, text string) {
		if !strings.HasSuffix(path, ".yaml") || strings.Contains(path, "crd") {
			return
		}
		for _, m := range envEntry.FindAllStringSubmatch(text, -1) {
			note(m[1], path)
		}
		for _, m := range regexp.MustCompile(`\$\(([A-Z][A-Z0-9_]+)\)`).FindAllStringSubmatch(text, -1) {
			expanded[m[1]] = true
		}
	})
	if documented["POD_IP"] == nil || documented["SWITCHBOARD_ADDR"] == nil {
		t.Fatalf("found %v: the patterns no longer find the documented variables", documented)
	}

	// What the code reads: a variable's name as a string literal, in Go
	// outside tests or in the scripts under hack/ (sdk-compat.js).
	var code, tests strings.Builder
	walk(t, root, func(path, text string) {
		switch filepath.Ext(path) {
		case ".go":
			if strings.HasSuffix(path, "_test.go") {
				tests.WriteString(text)
			} else {
				code.WriteString(text)
			}
		case ".js", ".sh", ".py":
			code.WriteString(strings.ReplaceAll(text, "'", `"`))
		}
	})
	names := make([]string, 0, len(documented))
	for name := range documented {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		literal := `"` + name + `"`
		switch {
		case strings.Contains(code.String(), literal), readElsewhere[name] != "", expanded[name]:
		case readByTests[name] != "" && strings.Contains(tests.String(), literal):
		default:
			t.Errorf("env %s is named in %s, but no code reads it", name, strings.Join(documented[name], ", "))
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

// walk calls f with each file under dir, but those of hidden folders and
// bin/.
func walk(t *testing.T, dir string, f func(path, text string)) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		f(path, read(t, path))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
