package devenv

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestSecondLockRefusedNamingTheHolder(t *testing.T) {
	dir := t.TempDir()
	held, err := lockState(dir, "http://127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockState(dir, "http://127.0.0.1:9090")
	var running *RunningError
	if !errors.As(err, &running) {
		t.Fatalf("second lock: %v, want a RunningError", err)
	}
	if running.PID != os.Getpid() || running.URL != "http://127.0.0.1:8080" {
		t.Errorf("holder = pid %d %s, want pid %d http://127.0.0.1:8080", running.PID, running.URL, os.Getpid())
	}
	for _, want := range []string{"already running from " + dir, "pid " + strconv.Itoa(os.Getpid()), "--dev-dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if err := held.release(); err != nil {
		t.Fatal(err)
	}
	again, err := lockState(dir, "http://127.0.0.1:9090")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	_ = again.release()
}

func TestFindLeftovers(t *testing.T) {
	procs := []process{
		{pid: 10, name: "etcd", args: []string{"--data-dir=/home/dev/switchboard/.dev/etcd", "--listen-client-urls=http://127.0.0.1:2379"}},
		{pid: 11, name: "etcd", args: []string{"--data-dir=/elsewhere/etcd", "--listen-client-urls=http://127.0.0.1:2380"}},
		// Started by an older version with a path relative to its folder.
		{pid: 12, name: "etcd", cwd: "/home/dev/switchboard", args: []string{"--data-dir", ".dev/etcd", "--listen-client-urls=http://127.0.0.1:2381"}},
		{pid: 20, name: "kube-apiserver", args: []string{"--etcd-servers=http://127.0.0.1:2379"}},
		{pid: 21, name: "kube-apiserver", args: []string{"--etcd-servers=http://127.0.0.1:2380"}},
		{pid: 22, name: "kube-apiserver", args: []string{"--etcd-servers=http://127.0.0.1:2381"}},
		{pid: 30, name: "bash", args: []string{"--data-dir=/home/dev/switchboard/.dev/etcd"}},
	}
	got := findLeftovers(procs, "/home/dev/switchboard/.dev/etcd/")
	want := []Leftover{{10, "etcd"}, {12, "etcd"}, {20, "kube-apiserver"}, {22, "kube-apiserver"}}
	if len(got) != len(want) {
		t.Fatalf("found %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("found %v, want %v", got, want)
		}
	}
}
