package siptest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// Process is a peer program run for a test, in its own process group (so
// that the children of a forking daemon go with it), with its output kept.
// It is killed when the test ends, and its output logged if the test
// failed.
type Process struct {
	// Dir is its working directory, a temporary folder (sipp writes its
	// logs there).
	Dir  string
	name string
	cmd  *exec.Cmd
	out  *testsupport.Buffer
	done chan struct{}
	err  error // exit status, once done is closed
}

// Start runs name with args, failing the test with install if the program
// is not on PATH.
func Start(t testing.TB, install, name string, args ...string) *Process {
	t.Helper()
	testsupport.Needs(t, name)
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not on PATH: these tests need it as a real SIP peer; install it with `%s` (%v)", name, install, err)
	}
	p := &Process{Dir: t.TempDir(), name: name, out: &testsupport.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.CommandContext(context.Background(), name, args...) // killed at cleanup
	p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = p.Dir, p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s %v:\n%s", name, args, p.Output())
		}
	})
	return p
}

// Stop kills the process group and waits for the process to end.
func (p *Process) Stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Output is what it printed so far.
func (p *Process) Output() string { return p.out.String() }

// Pid is its process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once it exited; Err is then its exit status.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is its exit status, once Done is closed.
func (p *Process) Err() error { return p.err }

// exited reports whether it has ended.
func (p *Process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// UDPBound reports whether a UDP socket is bound to 127.0.0.1:port, from
// the kernel's table (/proc/net/udp, addresses in hex), without binding
// the port, which could take it from under the peer.
func UDPBound(port int) bool {
	table, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		return false
	}
	return bytes.Contains(table, []byte(" 0100007F:"+hex4(port)+" "))
}

func hex4(port int) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[port>>12&15], digits[port>>8&15], digits[port>>4&15], digits[port&15]})
}
