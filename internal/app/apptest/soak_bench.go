package apptest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Soak is one run: the calls it placed and the series it sampled.
type Soak struct {
	B           *testing.B
	BaseURL     string
	Org         *Org
	Events      *ReceiverProcess
	Start       time.Time
	StoreBefore int64

	Mu     sync.Mutex
	Placed []string
	Failed int
}

func (s *Soak) Run(duration time.Duration, rate int, sample time.Duration) {
	s.B.Logf("%8s %8s %9s %15s %9s %13s %9s %12s %10s %10s", "elapsed", "placed", "in-cluster",
		"apiserver-RSS", "etcd-RSS", "operator-RSS", "Go-heap", "receiver-RSS", "store", "events")
	// A timeout: a request the API does not answer is a failure, not a
	// goroutine and a connection held for the rest of the run.
	httpc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	sampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(sample)
		defer t.Stop()
		for {
			select {
			case <-sampling:
				return
			case <-t.C:
				s.Sample()
			}
		}
	}()
	// Calls are placed on a schedule (the i-th at start + i/rate), not on a
	// ticker, which drops ticks when the machine is busy.
	var posts sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	for i := 0; ; i++ {
		at := s.Start.Add(time.Duration(i) * interval)
		if at.Sub(s.Start) >= duration {
			break
		}
		time.Sleep(time.Until(at))
		posts.Add(1)
		go func() {
			defer posts.Done()
			id, err := PlaceCall(httpc, s.BaseURL, s.Org, BenchNumber(i))
			s.Mu.Lock()
			defer s.Mu.Unlock()
			if err != nil {
				s.Failed++
				return
			}
			s.Placed = append(s.Placed, id)
		}()
	}
	posts.Wait()
	close(sampling)
	<-sampled
	// Drain: every call ends and is analyzed, every event arrives.
	want := 3 * len(s.Placed)
	deadline := time.Now().Add(10 * time.Minute)
	for s.Events.Total() < want && time.Now().Before(deadline) {
		time.Sleep(time.Second)
	}
	s.Sample()
}

func (s *Soak) Sample() {
	s.Mu.Lock()
	placed := len(s.Placed)
	s.Mu.Unlock()
	var calls switchboardv1.CallList
	inCluster := -1
	// A page of one: the apiserver counts the rest (remainingItemCount).
	if err := K8s.List(context.Background(), &calls, client.InNamespace(s.Org.Ns), client.Limit(1)); err == nil {
		inCluster = len(calls.Items)
		if calls.RemainingItemCount != nil {
			inCluster += int(*calls.RemainingItemCount)
		}
	}
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	s.B.Logf("%8s %8d %9d %15s %9s %13s %9s %12s %10s %10d", time.Since(s.Start).Round(time.Second), placed, inCluster,
		Mib(ChildRSS("kube-apiserver")), Mib(ChildRSS("etcd")), Mib(RSS(os.Getpid())), Mib(int64(mem.HeapInuse)),
		Mib(s.Events.RSS()), Mib(StoreBytes()), s.Events.Total())
}

// Check lists every call through the REST API and compares with what was
// placed and what the receiver got.
func (s *Soak) Check() {
	s.B.StopTimer()
	final, listed := map[string]bool{}, 0
	for call := range ListCalls(s.B, s.BaseURL, s.Org.Key) {
		listed++
		id, _ := call["call_id"].(string)
		status, _ := call["status"].(string)
		final[id] = switchboardv1.CallPhase(status).Final() && (status == "failed" || call["analysis"] != nil)
	}
	var lost, stuck, lostEvents int
	events := s.Events.Tally(s.B)
	for _, id := range s.Placed {
		done, ok := final[id]
		switch {
		case !ok:
			lost++
		case !done:
			stuck++
		}
		lostEvents += max(3-events.Kinds(id), 0)
	}
	storeGrowth := StoreBytes() - s.StoreBefore
	s.B.ReportMetric(float64(len(s.Placed)), "calls")
	s.B.ReportMetric(float64(s.Failed), "POST-failures")
	s.B.ReportMetric(float64(lost), "calls-lost")
	s.B.ReportMetric(float64(stuck), "calls-stuck")
	s.B.ReportMetric(float64(lostEvents), "events-lost")
	s.B.ReportMetric(float64(events.Duplicates()), "events-repeated")
	s.B.ReportMetric(float64(storeGrowth)/float64(max(len(s.Placed), 1)), "store-bytes/call")
	if s.Failed > 0 || lost > 0 || stuck > 0 || lostEvents > 0 || listed != len(final) {
		s.B.Errorf("%d POSTs failed, %d calls lost, %d stuck, %d events lost, %d listed for %d distinct ids",
			s.Failed, lost, stuck, lostEvents, listed, len(final))
	}
}

// ListCalls yields every call of the organization, newest first, page by
// page (1,000 a page).
func ListCalls(b testing.TB, baseURL, key string) func(func(map[string]any) bool) {
	return func(yield func(map[string]any) bool) {
		cursor := ""
		for {
			q := url.Values{"limit": {"1000"}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			r := Send(b, baseURL, "GET", "/v1/calls?"+q.Encode(), "Bearer "+key, nil)
			if r.Status != http.StatusOK {
				b.Fatalf("GET /v1/calls = %d %s", r.Status, r.Raw)
			}
			var page struct {
				Data       []map[string]any `json:"data"`
				NextCursor string           `json:"next_cursor"`
			}
			if err := json.Unmarshal(r.Raw, &page); err != nil {
				b.Fatal(err)
			}
			for _, c := range page.Data {
				if !yield(c) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			cursor = page.NextCursor
		}
	}
}

// EventTally keeps, per call, which events arrived and how often: little
// memory for hundreds of thousands.
type EventTally struct {
	Mu  sync.Mutex
	Got map[string]map[string]int // call id -> event -> deliveries
	N   int
}

// ServeHTTP is the webhook receiver: it answers 200 at once.
func (t *EventTally) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Event string `json:"event"`
		Call  struct {
			CallID string `json:"call_id"`
		} `json:"call"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	t.Mu.Lock()
	if t.Got[body.Call.CallID] == nil {
		t.Got[body.Call.CallID] = map[string]int{}
	}
	t.Got[body.Call.CallID][body.Event]++
	t.N++
	t.Mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// ReceiverProcessEnv makes the test binary a webhook receiver only (see
// TestMain): the soak runs its receiver in a process of its own, so that
// the memory the test process shows is the operator's and the load
// generator's, not the receiver's record of every event.
const ReceiverProcessEnv = "SWITCHBOARD_SOAK_RECEIVER"

// ServeReceiverProcess runs an HTTPS receiver (httptest's certificate, which
// the operator under test trusts), prints its URL on stdout and serves until
// stdin closes. GET /tally answers what arrived, as JSON.
func ServeReceiverProcess() int {
	t := &EventTally{Got: map[string]map[string]int{}}
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/switchboard", t)
	mux.HandleFunc("GET /tally", func(w http.ResponseWriter, r *http.Request) {
		t.Mu.Lock()
		defer t.Mu.Unlock()
		if r.URL.Query().Has("count") {
			_ = json.NewEncoder(w).Encode(t.Distinct())
			return
		}
		_ = json.NewEncoder(w).Encode(t.Got)
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	fmt.Println(srv.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// ReceiverProcess is the soak's view of the receiver process.
type ReceiverProcess struct {
	BaseURL string
	Cmd     *exec.Cmd
	Client  *http.Client
}

func StartReceiverProcess(b *testing.B) *ReceiverProcess {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), ReceiverProcessEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("receiver process: %v", err)
	}
	return &ReceiverProcess{BaseURL: strings.TrimSpace(line), Cmd: cmd,
		Client: &http.Client{Transport: &http.Transport{TLSClientConfig: ReceiverTLS}}}
}

func (p *ReceiverProcess) URL() string { return p.BaseURL + "/hooks/switchboard" }

func (p *ReceiverProcess) RSS() int64 { return RSS(p.Cmd.Process.Pid) }

// Total counts the distinct (call, event) pairs that arrived, or -1.
func (p *ReceiverProcess) Total() int {
	var n int
	if err := p.Get("/tally?count", &n); err != nil {
		return -1
	}
	return n
}

// Tally fetches everything that arrived.
func (p *ReceiverProcess) Tally(b *testing.B) *EventTally {
	t := &EventTally{}
	if err := p.Get("/tally", &t.Got); err != nil {
		b.Fatalf("receiver process: %v", err)
	}
	for _, kinds := range t.Got {
		for _, n := range kinds {
			t.N += n
		}
	}
	return t
}

func (p *ReceiverProcess) Get(path string, v any) error {
	resp, err := p.Client.Get(p.BaseURL + path)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	return json.NewDecoder(resp.Body).Decode(v)
}

func (t *EventTally) Distinct() int {
	n := 0
	for _, kinds := range t.Got {
		n += len(kinds)
	}
	return n
}

func (t *EventTally) Kinds(callID string) int {
	t.Mu.Lock()
	defer t.Mu.Unlock()
	return len(t.Got[callID])
}

// Duplicates counts deliveries beyond the first of each (call, event).
func (t *EventTally) Duplicates() int {
	t.Mu.Lock()
	defer t.Mu.Unlock()
	return t.N - t.Distinct()
}

// StoreBytes is the size of the suite's SQLite history store, its
// write-ahead log included.
func StoreBytes() int64 {
	var total int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(filepath.Join(RecordDir, ".history", "history.db"+suffix)); err == nil {
			total += fi.Size()
		}
	}
	return total
}

// ChildRSS is the resident memory of this process's child named comm (the
// control plane envtest started), or -1.
func ChildRSS(comm string) int64 {
	if pid := ChildPID(comm); pid > 0 {
		return RSS(pid)
	}
	return -1
}

// ChildPID is the process id of this process's child named comm, or -1.
func ChildPID(comm string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open || s[open+1:closing] != comm {
			continue
		}
		if f := strings.Fields(s[closing+1:]); len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			return pid
		}
	}
	return -1
}

// CPUTime is the CPU (user and system) a process has used so far, or -1.
func CPUTime(pid int) time.Duration {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return -1
	}
	s := string(stat)
	// After "(comm)": state is field 3, utime field 14, stime field 15.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return -1
	}
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	sys, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	const ticksPerSecond = 100 // USER_HZ, 100 on every Linux platform Go runs on
	return time.Duration(user+sys) * time.Second / ticksPerSecond
}

// RSS reads VmRSS of a process, in bytes, or -1.
func RSS(pid int) int64 {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return -1
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return -1
}

func Mib(n int64) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}

func EnvOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func EnvDuration(b *testing.B, name string, fallback time.Duration) time.Duration {
	d, err := time.ParseDuration(EnvOr(name, fallback.String()))
	if err != nil || d <= 0 {
		b.Fatalf("%s: want a duration such as 30m: %v", name, err)
	}
	return d
}
