package httpapi_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// The document lints clean with Redocly's recommended rules (pinned in
// hack/openapi-lint; accepted findings, each with why, in its
// .redocly.lint-ignore.yaml), so that generators and portals read it
// without complaint. The file linted is the one the server embeds and
// serves.
func TestOpenAPILint(t *testing.T) {
	testsupport.Needs(t, "Node.js and Redocly's CLI")
	tools := filepath.Join("..", "..", "hack", "openapi-lint")
	redocly := filepath.Join(tools, "node_modules", ".bin", "redocly")
	if _, err := os.Stat(redocly); err != nil {
		t.Fatalf("needs Redocly's CLI: npm ci --prefix hack/openapi-lint (make test does it): %v", err)
	}
	out, err := exec.Command(redocly, "lint", "--config", filepath.Join(tools, "redocly.yaml"),
		"--format=json", filepath.Join("openapi", "openapi.yaml")).Output()
	var report struct {
		Totals   struct{ Errors, Warnings int } `json:"totals"`
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
			Location []struct {
				Pointer string `json:"pointer"`
			} `json:"location"`
		} `json:"problems"`
	}
	if jerr := json.Unmarshal(out, &report); jerr != nil {
		t.Fatalf("redocly lint: %v, %v\n%s", err, jerr, out)
	}
	for _, p := range report.Problems {
		t.Errorf("%s %s: %s %v", p.Severity, p.RuleID, p.Message, p.Location)
	}
	if report.Totals.Errors+report.Totals.Warnings != 0 || err != nil {
		t.Fatalf("redocly lint: %d errors, %d warnings (%v)", report.Totals.Errors, report.Totals.Warnings, err)
	}
}
