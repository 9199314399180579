package devenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFile in the state folder is held (flock) by the instance running from
// it. The kernel releases the lock when the process ends, however it ends,
// so a crash never leaves a stale lock behind; the file's text (pid and
// URL) is only there to tell a second instance whom it met.
const lockFile = "instance.lock"

// RunningError says that another instance holds the state folder.
type RunningError struct {
	StateDir string
	// Holder is what the running instance wrote: its pid and URL.
	PID int
	URL string
}

func (e *RunningError) Error() string {
	who := "another Switchboard"
	if e.PID > 0 {
		who += fmt.Sprintf(" (pid %d", e.PID)
		if e.URL != "" {
			who += ", " + e.URL
		}
		who += ")"
	}
	return fmt.Sprintf("%s is already running from %s: use that one, stop it (Ctrl-C in its terminal, or kill %d), "+
		"or start this one with --dev-dir=<another folder>", who, e.StateDir, e.PID)
}

// instanceLock is the held lock; the open file is the lock.
type instanceLock struct{ f *os.File }

// lockState takes stateDir for this process, or returns a *RunningError
// at once when another process holds it.
func lockState(stateDir, url string) (*instanceLock, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(stateDir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, holderError(stateDir, string(holder))
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	if _, err := fmt.Fprintf(f, "pid %d\nurl %s\n", os.Getpid(), url); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return &instanceLock{f: f}, nil
}

// release lets another instance start (stopping the process does too).
func (l *instanceLock) release() error { return l.f.Close() }

func holderError(stateDir, text string) *RunningError {
	e := &RunningError{StateDir: stateDir}
	for _, line := range strings.Split(text, "\n") {
		key, value, _ := strings.Cut(line, " ")
		switch key {
		case "pid":
			e.PID, _ = strconv.Atoi(value)
		case "url":
			e.URL = value
		}
	}
	return e
}
