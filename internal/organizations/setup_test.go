package organizations

import (
	"os"
	"strings"
	"testing"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// The commands a resource outside an organization gives are the
// operations guide's (config/README.md, "Organizations and RBAC"), so that
// what a platform team reads in `kubectl describe` and in that section does
// the same thing.
func TestCommandsAreTheREADMEs(t *testing.T) {
	readme, err := os.ReadFile("../../config/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{switchboardv1.OrganizationRoleBindingCommand("acme"), switchboardv1.OrganizationLabelCommand("acme")} {
		if !strings.Contains(string(readme), "\n"+cmd+"\n") {
			t.Errorf("config/README.md does not document the command %q", cmd)
		}
	}
}
