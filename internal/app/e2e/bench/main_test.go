package bench_test

import (
	"flag"
	"os"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// TestMain starts the suite only for benchmarks, all this package holds:
// make test runs no benchmark, and so starts no control plane here. The
// soak benchmark's receiver process (apptest.Main) is served either way.
func TestMain(m *testing.M) {
	flag.Parse()
	if flag.Lookup("test.bench").Value.String() == "" && os.Getenv(apptest.ReceiverProcessEnv) == "" {
		os.Exit(m.Run())
	}
	os.Exit(apptest.Main(m))
}
