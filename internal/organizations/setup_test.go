package organizations

import (
	"os"
	"strings"
	"testing"
)

// The commands a resource outside an organization gives are the README's,
// so that what a platform team reads in `kubectl describe` and in the
// organizations section does the same thing.
func TestCommandsAreTheREADMEs(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{RoleBindingCommand("acme"), LabelCommand("acme")} {
		if !strings.Contains(string(readme), "\n"+cmd+"\n") {
			t.Errorf("README.md does not document the command %q", cmd)
		}
	}
}
