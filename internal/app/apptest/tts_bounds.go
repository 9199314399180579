package apptest

// Text-to-speech is bounded: what a call's variables make an agent say,
// and how long synthesis may take, away from the reconcile workers every
// call shares.

import (
	"os"
	"path/filepath"
	"testing"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// NoteAgent says the call's note five times in its first step: a variable
// within its own limit (1 KiB) can make a text over the spoken limit.
func NoteAgent(t *testing.T, o *Org) string {
	a := CreateAgent(t, o.Ns, "notes", func(s *switchboardv1.AgentSpec) {
		s.Script = []switchboardv1.ScriptStep{{Say: "{{note}} {{note}} {{ note }} {{note}} {{note}}"}}
	})
	return a.ResolvedID()
}

// HangingFlite is a stand-in for a synthesizer that hangs: a shell script
// that sleeps instead of speaking.
func HangingFlite(t *testing.T) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "flite")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsleep 60\n"), 0o755); err != nil { //nolint:gosec // an executable stand-in
		t.Fatal(err)
	}
	return script
}
