package webhooks_test

// The example receivers of hack/receivers, run as real processes the way
// a customer runs them, receiving real deliveries from the running operator.

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// TestReceiverExampleGo builds hack/receivers/go and runs it against
// real deliveries.
func TestReceiverExampleGo(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "receiver")
	build := exec.Command(goTool, "build", "-o", bin, "./hack/receivers/go")
	build.Dir = RepoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./hack/receivers/go: %v\n%s", err, out)
	}
	CheckReceiverExample(t, bin)
}

// TestReceiverExampleNode runs hack/receivers/node/server.js against
// real deliveries.
func TestReceiverExampleNode(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(RepoRoot, "hack", "receivers", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks")); err != nil {
		t.Fatalf("hack/receivers/node/node_modules is missing: run `npm ci --prefix hack/receivers/node` "+
			"(make test does it): %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (the Node example needs Node.js 18 or later): %v", err)
	}
	CheckReceiverExample(t, node, filepath.Join(dir, "server.js"))
}
