package testsupport

import (
	"sync"
	"testing"
)

// Suite is what the tests of a package share and is costly to start (a
// control plane, a manager, a browser): the first test that needs it
// starts it, so that a package's pure tests run without it under -short
// (make test-unit), and TestMain stops it after the last test.
type Suite struct {
	// What it is, for the skip message under -short.
	What string
	// Start starts it and returns what stops it; on an error it leaves
	// nothing running.
	Start func() (stop func(), err error)

	once sync.Once
	stop func()
	err  error
}

// Need skips tb under -short; otherwise it starts the suite on first use,
// and fails tb when it could not start (every later test then fails the
// same way).
func (s *Suite) Need(tb testing.TB) {
	tb.Helper()
	Needs(tb, s.What)
	s.once.Do(func() { s.stop, s.err = s.Start() })
	if s.err != nil {
		tb.Fatalf("starting %s: %v", s.What, s.err)
	}
}

// Run is TestMain's body: it runs the tests, then stops the suite if one
// of them started it, and returns the exit code.
func (s *Suite) Run(m *testing.M) int {
	code := m.Run()
	if s.stop != nil {
		s.stop()
	}
	return code
}

// Stops collects what a Start has started, so that it undoes it on an
// error and returns it as its stop function otherwise.
type Stops []func()

// Add is one more thing to stop, stopped before those added earlier.
func (s *Stops) Add(stop func()) { *s = append(*s, stop) }

// All stops everything added, the last added first.
func (s Stops) All() {
	for i := len(s) - 1; i >= 0; i-- {
		s[i]()
	}
}
