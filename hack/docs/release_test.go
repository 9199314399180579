package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// absence is a check that something api/README.md lists under "Not in this
// release" is still absent from the code: it returns "" while it is, and
// otherwise what was found.
type absence struct {
	item  string // how the list's item begins, bold marks removed
	check func(t *testing.T) string
}

// absences has one check per item of the list. When the code gains what an
// item names, its check fails until the item leaves the list; an item
// without a check fails too, so the list cannot grow unchecked.
var absences = []absence{
	{"Inbound calls", func(t *testing.T) string {
		return unless(t, "internal/telephony/sip/engine/engine.go", "d.Respond(sipmsg.StatusForbidden",
			"the SIP engine no longer answers every INVITE 403")
	}},
	{"Deleting a Call", func(t *testing.T) string {
		// Recordings are deleted in one place: the retention job.
		for _, f := range codeFiles(t, "controllers", "internal") {
			if strings.Contains(read(t, f), "Recordings.Delete(") && !strings.HasSuffix(f, "recording_retention.go") {
				return rel(f) + " deletes recordings"
			}
		}
		return ""
	}},
	{"Calls faster than", func(t *testing.T) string {
		return unless(t, "internal/calls/place.go", "func (p *Placer) create(",
			"a placed call is no longer created as a Call resource")
	}},
	{"Shared dashboard sessions", func(t *testing.T) string {
		return unless(t, "internal/dashboard/sessions.go", "byID: map[string]*session{}",
			"dashboard sessions are no longer kept in the replica's memory")
	}},
	{"A create rate held across replicas", func(t *testing.T) string {
		return unless(t, "internal/quota/quota.go", "limiter *rate.Limiter",
			"the create rate is no longer a token bucket in each replica")
	}},
}

// The "Not in this release" list names only what is absent.
func TestNotInThisReleaseIsAbsent(t *testing.T) {
	items := notInThisRelease(t)
	if len(items) == 0 {
		t.Fatal(`api/README.md has no items under "## Not in this release"`)
	}
	checked := map[string]bool{}
	for _, item := range items {
		var a *absence
		for i := range absences {
			if strings.HasPrefix(item, absences[i].item) {
				a = &absences[i]
			}
		}
		if a == nil {
			t.Errorf("no check that this is absent (add one to absences): %q", item)
			continue
		}
		checked[a.item] = true
		if found := a.check(t); found != "" {
			t.Errorf("api/README.md says %q is not in this release, but %s: update the list", a.item, found)
		}
	}
	for _, a := range absences {
		if !checked[a.item] {
			t.Errorf("absences checks %q, which the list no longer names: remove the check", a.item)
		}
	}
}

// notInThisRelease are the items of api/README.md's list, bold marks
// removed, each joined onto one line.
func notInThisRelease(t *testing.T) []string {
	t.Helper()
	text := read(t, filepath.Join(repoRoot, "api", "README.md"))
	_, section, ok := strings.Cut(text, "\n## Not in this release\n")
	if !ok {
		t.Fatal(`api/README.md has no section "## Not in this release"`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var items []string
	for _, line := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(line, "- "):
			items = append(items, strings.ReplaceAll(line[2:], "**", ""))
		case strings.HasPrefix(line, "  ") && len(items) > 0:
			items[len(items)-1] += " " + strings.TrimSpace(strings.ReplaceAll(line, "**", ""))
		}
	}
	return items
}

// unless is "" when file holds marker, the mark of the absence; otherwise
// gone says what changed.
func unless(t *testing.T, file, marker, gone string) string {
	t.Helper()
	if strings.Contains(read(t, filepath.Join(repoRoot, file)), marker) {
		return ""
	}
	return gone + " (" + file + " has no " + marker + ")"
}

// codeFiles are the Go files under dirs, tests aside.
func codeFiles(t *testing.T, dirs ...string) []string {
	t.Helper()
	var files []string
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}
