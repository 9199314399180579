package testsupport

import (
	"flag"
	"fmt"
	"testing"
)

// Two tiers of tests. `make test-unit` runs `go test -short ./...`: no
// control plane and no tool outside Go, in a minute or two. `make test`
// runs everything, as CI does. A test that needs a control plane or an
// external tool says so with Needs (a package whose tests share a
// control plane asks a Suite for it, which starts it on first use; a
// package whose every test needs one starts it in TestMain with
// SkipSuiteIfShort): skipped under -short, and without the tool it fails
// saying how to install it.

// Needs skips tb under -short: it needs what (a control plane, sipp,
// PostgreSQL ...), which make test-unit does not provide.
func Needs(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("needs %s: run by make test, not make test-unit (-short)", what)
	}
}

// SkipSuiteIfShort is for a TestMain that starts what every test of its
// package needs: under -short it says so and reports true, and TestMain
// exits 0 without running the suite.
func SkipSuiteIfShort(what string) bool {
	flag.Parse()
	if testing.Short() {
		fmt.Printf("skipped: the package's tests need %s: run by make test, not make test-unit (-short)\n", what)
		return true
	}
	return false
}
