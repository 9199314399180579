package main

// TestLocalRunContract starts the real binary the way `make run` does and
// checks DESIGN.md's local run contract: a user can curl the REST API with
// .dev/api-key at once, kubectl works with .dev/kubeconfig, a call that
// has left the cluster still reads the same, Ctrl-C (SIGINT) stops
// everything, leaving no kube-apiserver or etcd behind, and a second start
// resumes the state the first left in the dev folder.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

func TestLocalRunContract(t *testing.T) {
	assets := devAssets(t)
	bin := buildBinary(t)
	devDir, addr, metricsAddr := t.TempDir(), testsupport.FreeAddr(t), testsupport.FreeAddr(t)
	base := "http://" + addr

	// First run: a short retention (ARGS), so the call leaves the cluster.
	cmd, logs := startDev(t, bin, assets, devDir, addr, "--call-retention=1s", "--metrics-bind-address="+metricsAddr)
	key := waitForFile(t, filepath.Join(devDir, "api-key"), logs)
	status, body := waitForAPI(t, base+"/v1/calls", key, logs)
	if status != http.StatusCreated {
		t.Fatalf("POST /v1/calls with the demo key = %d %s", status, body)
	}
	waitForLog(t, logs, "Switchboard is running. In another terminal:")
	waitForLog(t, logs, "new local state")
	callID := between(body, `"call_id":"`, `"`)
	out, err := exec.Command(filepath.Join(assets, "kubectl"), "--kubeconfig", filepath.Join(devDir, "kubeconfig"),
		"get", "calls,agents,numberlists", "-n", "demo").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "appointment-reminder") || !strings.Contains(string(out), "do-not-call") {
		t.Fatalf("kubectl get with .dev/kubeconfig: %v\n%s", err, out)
	}
	checkManagerRights(t, assets, devDir)
	checkCallSourcePolicy(t, assets, devDir)
	analyzed := waitForCall(t, base, key, callID, `"analysis":{`, logs)
	waitForKubectl(t, assets, devDir, func(out string) bool {
		return !strings.Contains(out, strings.ReplaceAll(callID, "_", "-"))
	}, "the call leaves the cluster after its retention", logs)
	if got := getCall(t, base, key, callID); withoutLink(got) != withoutLink(analyzed) {
		t.Fatalf("archived call reads\n%s\nwas\n%s", got, analyzed)
	}
	checkMetrics(t, metricsAddr, logs)
	stopDev(t, cmd, logs)

	// Second run: the state in the dev folder is kept.
	cmd, logs = startDev(t, bin, assets, devDir, addr)
	waitForLog(t, logs, "resuming the local state kept in "+devDir)
	waitForCall(t, base, key, callID, `"analysis":{`, logs)
	if got := getCall(t, base, key, callID); withoutLink(got) != withoutLink(analyzed) {
		t.Fatalf("after a restart the call reads\n%s\nwas\n%s", got, analyzed)
	}
	stopDev(t, cmd, logs)
}

// devAssets is the folder of kube-apiserver, etcd and kubectl.
func devAssets(t *testing.T) string {
	testsupport.Needs(t, "a control plane (envtest)")
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make test`")
	}
	return assets
}

// checkMetrics scrapes the development metrics endpoint (plain HTTP, as
// the banner prints it) after the first call: the series of its life moved.
func checkMetrics(t *testing.T, addr string, logs *testsupport.Buffer) {
	waitForLog(t, logs, "curl -s http://"+addr+"/metrics")
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scraping metrics: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	// The demo data holds a Call of its own (source kubectl): counts of
	// every call are at least one.
	for series, atLeast := range map[string]float64{
		`switchboard_calls_created_total{source="api"}`:                                              1,
		`switchboard_calls_created_total{source="kubectl"}`:                                          1,
		`switchboard_calls_ended_total{disposition="answered",status="ended"}`:                       1,
		`switchboard_api_request_duration_seconds_count{code="201",method="POST",route="/v1/calls"}`: 1,
		`switchboard_calls_archived_total`:                                                           1,
		`switchboard_call_archive_lag_seconds_count`:                                                 1,
		`switchboard_call_duration_seconds_count`:                                                    1,
		`switchboard_calls_live`:                                                                     0,
		`switchboard_webhook_deliveries_pending`:                                                     0,
	} {
		v, ok := metricValue(string(b), series)
		if !ok || v < atLeast {
			t.Errorf("metrics: %s = %v (present: %v), want at least %v", series, v, ok, atLeast)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", grepLines(string(b), "switchboard_"))
	}
}

// metricValue finds the sample of series (name and labels, as exposed).
func metricValue(text, series string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

func grepLines(text, prefix string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// checkManagerRights checks that the local instance sets up the RBAC of a
// deployment: the manager's service account may read the Secrets of the
// demo organization and of no other namespace.
func checkManagerRights(t *testing.T, assets, devDir string) {
	t.Helper()
	for ns, want := range map[string]string{"demo": "yes", "kube-system": "no", "default": "no"} {
		out, _ := exec.Command(filepath.Join(assets, "kubectl"), "--kubeconfig", filepath.Join(devDir, "kubeconfig"),
			"auth", "can-i", "get", "secrets", "-n", ns,
			"--as", "system:serviceaccount:switchboard-system:switchboard-manager").CombinedOutput()
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("may the manager get the Secrets of namespace %s? %q, want %q", ns, got, want)
		}
	}
}

// checkCallSourcePolicy checks that the local instance installs the
// admission policies of a deployment (config/policy): a cluster
// administrator's Call claiming source "api" is refused, as in a cluster.
func checkCallSourcePolicy(t *testing.T, assets, devDir string) {
	t.Helper()
	call := `{"apiVersion":"switchboard.dev/v1alpha1","kind":"Call","metadata":{"name":"claims-api","namespace":"demo"},
		"spec":{"agentID":"7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f","toNumber":"+14155551234","source":"api"}}`
	var out []byte
	// The apiserver takes a moment to load a new policy; dry runs create nothing.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		kubectl := exec.Command(filepath.Join(assets, "kubectl"), "--kubeconfig", filepath.Join(devDir, "kubeconfig"),
			"create", "--dry-run=server", "-f", "-")
		kubectl.Stdin = strings.NewReader(call)
		var err error
		if out, err = kubectl.CombinedOutput(); err != nil && strings.Contains(string(out), `spec.source "api" is set by Switchboard`) {
			return
		}
	}
	t.Errorf("kubectl create of a Call with source api as cluster admin: %s\nwant it refused by config/policy", out)
}

// startDev starts the binary the way `make run` does.
func startDev(t *testing.T, bin, assets, devDir, addr string, args ...string) (*exec.Cmd, *testsupport.Buffer) {
	cmd := exec.Command(bin, append([]string{"--dev", "--dev-dir", devDir}, args...)...)
	cmd.Dir = filepath.Join("..", "..") // the checkout root, as `make run`
	cmd.Env = append(os.Environ(), "SWITCHBOARD_ASSETS="+assets, "SWITCHBOARD_ADDR="+addr)
	logs := &testsupport.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, logs
}

// stopDev sends Ctrl-C and checks that everything exits, cleanly.
func stopDev(t *testing.T, cmd *exec.Cmd, logs *testsupport.Buffer) {
	children := descendants(cmd.Process.Pid)
	if len(children) < 2 {
		t.Fatalf("expected kube-apiserver and etcd under the process, found pids %v", children)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after Ctrl-C: %v\n%s", err, tail(logs.String()))
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("still running 60 s after Ctrl-C\n%s", tail(logs.String()))
	}
	for _, pid := range children {
		if alive(pid) {
			t.Errorf("process %d (%s) survived Ctrl-C", pid, comm(pid))
		}
	}
}

// getCall reads a call object; the test fails on anything but 200.
func getCall(t *testing.T, base, key, id string) string {
	status, body, err := send("GET", base+"/v1/calls/"+id, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK {
		t.Fatalf("GET /v1/calls/%s = %d %s", id, status, body)
	}
	return body
}

// send makes one request with the API key and returns the answer.
func send(method, url, key, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// waitForCall waits until the call object contains text.
func waitForCall(t *testing.T, base, key, id, text string, logs *testsupport.Buffer) string {
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got := getCall(t, base, key, id); strings.Contains(got, text) {
			return got
		}
	}
	t.Fatalf("call %s never showed %s\n%s", id, text, tail(logs.String()))
	return ""
}

// waitForKubectl waits until `kubectl get calls -n demo` satisfies ok.
func waitForKubectl(t *testing.T, assets, devDir string, ok func(string) bool, what string, logs *testsupport.Buffer) {
	var out []byte
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var err error
		out, err = exec.Command(filepath.Join(assets, "kubectl"), "--kubeconfig", filepath.Join(devDir, "kubeconfig"),
			"get", "calls", "-n", "demo").CombinedOutput()
		if err == nil && ok(string(out)) {
			return
		}
	}
	t.Fatalf("%s: never happened; kubectl get calls:\n%s\n%s", what, out, tail(logs.String()))
}

// withoutLink drops the recording link, which is signed afresh at each read.
func withoutLink(call string) string {
	link := between(call, `"recording_url":"`, `"`)
	return strings.Replace(call, link, "", 1)
}

// between returns what s holds between the first start and the next end.
func between(s, start, end string) string {
	_, after, ok := strings.Cut(s, start)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, end)
	return v
}

func waitForFile(t *testing.T, path string, logs *testsupport.Buffer) string {
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return strings.TrimSpace(string(b))
		}
	}
	t.Fatalf("%s never appeared\n%s", path, tail(logs.String()))
	return ""
}

// waitForLog waits for the process to print text: the banner follows the
// API's first answer by microseconds, but a message printed once the
// control plane is up can take many seconds on a busy machine.
func waitForLog(t *testing.T, logs *testsupport.Buffer, text string) {
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if strings.Contains(logs.String(), text) {
			return
		}
	}
	t.Fatalf("never printed %q\n%s", text, tail(logs.String()))
}

// readmeCall is the body of the README's first call.
const readmeCall = `{"agent_id":"7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f","to_number":"+14155551234","variables":{"customer_name":"Ada"}}`

// waitForAPI places the README's first call as soon as the API answers.
func waitForAPI(t *testing.T, url, key string, logs *testsupport.Buffer) (int, string) {
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if status, body, err := send("POST", url, key, readmeCall); err == nil {
			return status, body
		}
	}
	t.Fatalf("REST API never answered\n%s", tail(logs.String()))
	return 0, ""
}

// descendants lists every process below pid, from /proc.
func descendants(pid int) []int {
	parents := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 {
			ppid, _ := strconv.Atoi(fields[1])
			parents[ppid] = append(parents[ppid], child)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		out = append(out, parents[p]...)
		queue = append(queue, parents[p]...)
	}
	return out
}

func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" // a zombie has exited
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}
