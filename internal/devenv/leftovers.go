package devenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// envtest starts etcd and kube-apiserver in process groups of their own, so
// when the instance that started them dies without stopping them (SIGKILL,
// out of memory, a second Ctrl-C during start-up) they keep running, and
// etcd keeps its data folder locked: the next start would wait minutes for
// an etcd that cannot take the folder. Having taken the instance lock, the
// new instance knows that no live instance owns them, and ends them first.

// Leftover is a control-plane process an earlier instance left running.
type Leftover struct {
	PID  int
	Name string
}

func (l Leftover) String() string { return fmt.Sprintf("%s (pid %d)", l.Name, l.PID) }

// How long a leftover gets to stop on SIGTERM before SIGKILL.
const (
	leftoverGrace = 10 * time.Second
	leftoverPoll  = 20 * time.Millisecond
)

// EndLeftovers ends the control plane that an instance killed before it
// could stop it left running on stateDir, and returns what it ended. Start
// calls it; a test that kills instances calls it to clean up after itself.
func EndLeftovers(stateDir string) ([]Leftover, error) {
	etcdDir, err := filepath.Abs(filepath.Join(stateDir, "etcd"))
	if err != nil {
		return nil, err
	}
	return endLeftovers(etcdDir)
}

// endLeftovers ends the etcd serving dataDir (an absolute path) and the
// kube-apiservers that use it, and returns what it ended.
func endLeftovers(dataDir string) ([]Leftover, error) {
	found := findLeftovers(listProcesses(), dataDir)
	var errs []error
	// The apiservers first: they would log errors for an etcd gone first.
	for i := len(found) - 1; i >= 0; i-- {
		errs = append(errs, stop(found[i].PID))
	}
	return found, errors.Join(errs...)
}

// process is what /proc tells of a running process.
type process struct {
	pid  int
	name string
	args []string
	cwd  string
}

// findLeftovers picks, in start order, the etcd whose data folder is
// dataDir, then each kube-apiserver whose etcd is that etcd.
func findLeftovers(procs []process, dataDir string) []Leftover {
	var out []Leftover
	var etcdURLs []string
	for _, p := range procs {
		if p.name != "etcd" {
			continue
		}
		dir := flagValue(p.args, "data-dir")
		if dir != "" && !filepath.IsAbs(dir) {
			dir = filepath.Join(p.cwd, dir) // started by an older version, with a relative folder
		}
		if dir != "" && filepath.Clean(dir) == filepath.Clean(dataDir) {
			out = append(out, Leftover{PID: p.pid, Name: p.name})
			etcdURLs = append(etcdURLs, flagValue(p.args, "listen-client-urls"))
		}
	}
	for _, p := range procs {
		if p.name != "kube-apiserver" {
			continue
		}
		for _, u := range etcdURLs {
			if u != "" && flagValue(p.args, "etcd-servers") == u {
				out = append(out, Leftover{PID: p.pid, Name: p.name})
			}
		}
	}
	return out
}

// flagValue reads --name=value or --name value from args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// listProcesses reads /proc; where there is none it finds nothing, and a
// leftover shows itself as etcd failing to start.
func listProcesses() []process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(cmdline, "\x00")), "\x00")
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		out = append(out, process{pid: pid, name: filepath.Base(args[0]), args: args[1:], cwd: cwd})
	}
	return out
}

// stop sends SIGTERM, then SIGKILL after leftoverGrace, and waits until the
// process is gone (it is not our child: poll, do not wait).
func stop(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return ignoreGone(err)
	}
	if gone(pid, leftoverGrace) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return ignoreGone(err)
	}
	if !gone(pid, leftoverGrace) {
		return fmt.Errorf("process %d did not end after SIGKILL", pid)
	}
	return nil
}

func gone(pid int, within time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(leftoverPoll) {
		if !running(pid) {
			return true
		}
	}
	return !running(pid)
}

// running is false for a process that has ended, zombies included (a
// leftover's new parent reaps it when it gets to it).
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func ignoreGone(err error) error {
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
