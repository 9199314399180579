package callinput

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/calls"
)

// The reference's table of GET /v1/calls's filters lists every value a
// filter accepts, and no other: a reader who filters by what the table
// says is never refused, and finds every kind of call (source=campaign was
// missing).
func TestQueryTableListsEveryValue(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "api", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "### Listing calls")
	if start < 0 {
		t.Fatal("api/README.md has no section \"### Listing calls\"")
	}
	section := doc[start:]
	if end := strings.Index(section[1:], "\n#"); end > 0 {
		section = section[:end]
	}
	for field, accepted := range map[string][]string{"status": calls.Statuses, "disposition": calls.Dispositions,
		"source": calls.Sources} {
		row := regexp.MustCompile("(?m)^\\| `" + field + "` \\| (.*) \\|$").FindStringSubmatch(section)
		if row == nil {
			t.Errorf("the filter table has no row for %s", field)
			continue
		}
		var listed []string
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(row[1], -1) {
			listed = append(listed, m[1])
		}
		if !slices.Equal(slices.Sorted(slices.Values(listed)), slices.Sorted(slices.Values(accepted))) {
			t.Errorf("the filter table lists %s as %v; GET /v1/calls accepts %v", field, listed, accepted)
		}
	}
}
