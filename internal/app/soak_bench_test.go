package app_test

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
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
)

// BenchmarkSoak places calls through the REST API at a steady rate for a
// long time (30 minutes at 50 calls/s by default) with a short
// --call-retention (5 minutes), one webhook endpoint subscribed to every
// event, and the simulated carrier's default timings. Every minute it
// prints the Calls in the cluster, the resident memory of kube-apiserver,
// etcd and the test process (the operator and the load generator; the
// receiver runs in a process of its own), the Go heap, the receiver's
// memory and the history store's size: after the
// first retention window they should stay flat. At the end it checks that
// every call placed is listed by GET /v1/calls exactly once and final, and
// that every one of its three events arrived. Run it with
// `make bench-soak` (SOAK_DURATION, SOAK_RATE, SOAK_RETENTION adjust it).
func BenchmarkSoak(b *testing.B) {
	duration := envDuration(b, "SWITCHBOARD_SOAK_DURATION", 30*time.Minute)
	retention := envDuration(b, "SWITCHBOARD_SOAK_RETENTION", 5*time.Minute)
	sample := envDuration(b, "SWITCHBOARD_SOAK_SAMPLE", time.Minute)
	rate, err := strconv.Atoi(envOr("SWITCHBOARD_SOAK_RATE", "50"))
	if err != nil || rate <= 0 {
		b.Fatalf("SWITCHBOARD_SOAK_RATE: want a positive number of calls per second")
	}
	full, err := startOperator(true, func(o *app.Options) {
		o.SimTimings = sim.DefaultTimings()
		o.MaxConcurrentCalls = 64
		o.Retention.Calls = retention
		o.Retention.Recordings = 2 * retention // keeps the disk bounded too
		o.CallNormalEvents = false             // the default outside --dev
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(full.stop)
	o := newOrg(b)
	events := startReceiverProcess(b)
	applyEndpoint(b, o.ns, events.url(), nil)

	b.ResetTimer()
	for range b.N {
		s := &soak{b: b, baseURL: full.baseURL, org: o, events: events, start: time.Now()}
		s.storeBefore = storeBytes()
		s.run(duration, rate, sample)
		s.check()
	}
}

// soak is one run: the calls it placed and the series it sampled.
type soak struct {
	b           *testing.B
	baseURL     string
	org         *org
	events      *receiverProcess
	start       time.Time
	storeBefore int64

	mu     sync.Mutex
	placed []string
	failed int
}

func (s *soak) run(duration time.Duration, rate int, sample time.Duration) {
	s.b.Logf("%8s %8s %9s %15s %9s %13s %9s %12s %10s %10s", "elapsed", "placed", "in-cluster",
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
				s.sample()
			}
		}
	}()
	// Calls are placed on a schedule (the i-th at start + i/rate), not on a
	// ticker, which drops ticks when the machine is busy.
	var posts sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	for i := 0; ; i++ {
		at := s.start.Add(time.Duration(i) * interval)
		if at.Sub(s.start) >= duration {
			break
		}
		time.Sleep(time.Until(at))
		posts.Add(1)
		go func() {
			defer posts.Done()
			id, err := placeCall(httpc, s.baseURL, s.org, benchNumber(i))
			s.mu.Lock()
			defer s.mu.Unlock()
			if err != nil {
				s.failed++
				return
			}
			s.placed = append(s.placed, id)
		}()
	}
	posts.Wait()
	close(sampling)
	<-sampled
	// Drain: every call ends and is analyzed, every event arrives.
	want := 3 * len(s.placed)
	deadline := time.Now().Add(10 * time.Minute)
	for s.events.total() < want && time.Now().Before(deadline) {
		time.Sleep(time.Second)
	}
	s.sample()
}

func (s *soak) sample() {
	s.mu.Lock()
	placed := len(s.placed)
	s.mu.Unlock()
	var calls switchboardv1.CallList
	inCluster := -1
	// A page of one: the apiserver counts the rest (remainingItemCount).
	if err := k8s.List(context.Background(), &calls, client.InNamespace(s.org.ns), client.Limit(1)); err == nil {
		inCluster = len(calls.Items)
		if calls.RemainingItemCount != nil {
			inCluster += int(*calls.RemainingItemCount)
		}
	}
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	s.b.Logf("%8s %8d %9d %15s %9s %13s %9s %12s %10s %10d", time.Since(s.start).Round(time.Second), placed, inCluster,
		mib(childRSS("kube-apiserver")), mib(childRSS("etcd")), mib(rss(os.Getpid())), mib(int64(mem.HeapInuse)),
		mib(s.events.rss()), mib(storeBytes()), s.events.total())
}

// check lists every call through the REST API and compares with what was
// placed and what the receiver got.
func (s *soak) check() {
	s.b.StopTimer()
	final, listed := map[string]bool{}, 0
	for call := range listCalls(s.b, s.baseURL, s.org.key) {
		listed++
		id, _ := call["call_id"].(string)
		status, _ := call["status"].(string)
		final[id] = switchboardv1.CallPhase(status).Final() && (status == "failed" || call["analysis"] != nil)
	}
	var lost, stuck, lostEvents int
	events := s.events.tally(s.b)
	for _, id := range s.placed {
		done, ok := final[id]
		switch {
		case !ok:
			lost++
		case !done:
			stuck++
		}
		lostEvents += max(3-events.kinds(id), 0)
	}
	storeGrowth := storeBytes() - s.storeBefore
	s.b.ReportMetric(float64(len(s.placed)), "calls")
	s.b.ReportMetric(float64(s.failed), "POST-failures")
	s.b.ReportMetric(float64(lost), "calls-lost")
	s.b.ReportMetric(float64(stuck), "calls-stuck")
	s.b.ReportMetric(float64(lostEvents), "events-lost")
	s.b.ReportMetric(float64(events.duplicates()), "events-repeated")
	s.b.ReportMetric(float64(storeGrowth)/float64(max(len(s.placed), 1)), "store-bytes/call")
	if s.failed > 0 || lost > 0 || stuck > 0 || lostEvents > 0 || listed != len(final) {
		s.b.Errorf("%d POSTs failed, %d calls lost, %d stuck, %d events lost, %d listed for %d distinct ids",
			s.failed, lost, stuck, lostEvents, listed, len(final))
	}
}

// listCalls yields every call of the organization, newest first, page by
// page (1,000 a page).
func listCalls(b testing.TB, baseURL, key string) func(func(map[string]any) bool) {
	return func(yield func(map[string]any) bool) {
		cursor := ""
		for {
			q := url.Values{"limit": {"1000"}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			r := send(b, baseURL, "GET", "/v1/calls?"+q.Encode(), "Bearer "+key, nil)
			if r.status != http.StatusOK {
				b.Fatalf("GET /v1/calls = %d %s", r.status, r.raw)
			}
			var page struct {
				Data       []map[string]any `json:"data"`
				NextCursor string           `json:"next_cursor"`
			}
			if err := json.Unmarshal(r.raw, &page); err != nil {
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

// eventTally keeps, per call, which events arrived and how often: little
// memory for hundreds of thousands.
type eventTally struct {
	mu  sync.Mutex
	got map[string]map[string]int // call id -> event -> deliveries
	n   int
}

// ServeHTTP is the webhook receiver: it answers 200 at once.
func (t *eventTally) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	t.mu.Lock()
	if t.got[body.Call.CallID] == nil {
		t.got[body.Call.CallID] = map[string]int{}
	}
	t.got[body.Call.CallID][body.Event]++
	t.n++
	t.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// receiverProcessEnv makes the test binary a webhook receiver only (see
// TestMain): the soak runs its receiver in a process of its own, so that
// the memory the test process shows is the operator's and the load
// generator's, not the receiver's record of every event.
const receiverProcessEnv = "SWITCHBOARD_SOAK_RECEIVER"

// serveReceiverProcess runs an HTTPS receiver (httptest's certificate, which
// the operator under test trusts), prints its URL on stdout and serves until
// stdin closes. GET /tally answers what arrived, as JSON.
func serveReceiverProcess() int {
	t := &eventTally{got: map[string]map[string]int{}}
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/switchboard", t)
	mux.HandleFunc("GET /tally", func(w http.ResponseWriter, r *http.Request) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if r.URL.Query().Has("count") {
			_ = json.NewEncoder(w).Encode(t.distinct())
			return
		}
		_ = json.NewEncoder(w).Encode(t.got)
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	fmt.Println(srv.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// receiverProcess is the soak's view of the receiver process.
type receiverProcess struct {
	baseURL string
	cmd     *exec.Cmd
	client  *http.Client
}

func startReceiverProcess(b *testing.B) *receiverProcess {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), receiverProcessEnv+"=1")
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
	return &receiverProcess{baseURL: strings.TrimSpace(line), cmd: cmd,
		client: &http.Client{Transport: &http.Transport{TLSClientConfig: receiverTLS}}}
}

func (p *receiverProcess) url() string { return p.baseURL + "/hooks/switchboard" }

func (p *receiverProcess) rss() int64 { return rss(p.cmd.Process.Pid) }

// total counts the distinct (call, event) pairs that arrived, or -1.
func (p *receiverProcess) total() int {
	var n int
	if err := p.get("/tally?count", &n); err != nil {
		return -1
	}
	return n
}

// tally fetches everything that arrived.
func (p *receiverProcess) tally(b *testing.B) *eventTally {
	t := &eventTally{}
	if err := p.get("/tally", &t.got); err != nil {
		b.Fatalf("receiver process: %v", err)
	}
	for _, kinds := range t.got {
		for _, n := range kinds {
			t.n += n
		}
	}
	return t
}

func (p *receiverProcess) get(path string, v any) error {
	resp, err := p.client.Get(p.baseURL + path)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	return json.NewDecoder(resp.Body).Decode(v)
}

func (t *eventTally) distinct() int {
	n := 0
	for _, kinds := range t.got {
		n += len(kinds)
	}
	return n
}

func (t *eventTally) kinds(callID string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.got[callID])
}

// duplicates counts deliveries beyond the first of each (call, event).
func (t *eventTally) duplicates() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n - t.distinct()
}

// storeBytes is the size of the suite's SQLite history store, its
// write-ahead log included.
func storeBytes() int64 {
	var total int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(filepath.Join(recordDir, ".history", "history.db"+suffix)); err == nil {
			total += fi.Size()
		}
	}
	return total
}

// childRSS is the resident memory of this process's child named comm (the
// control plane envtest started), or -1.
func childRSS(comm string) int64 {
	if pid := childPID(comm); pid > 0 {
		return rss(pid)
	}
	return -1
}

// childPID is the process id of this process's child named comm, or -1.
func childPID(comm string) int {
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

// cpuTime is the CPU (user and system) a process has used so far, or -1.
func cpuTime(pid int) time.Duration {
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

// rss reads VmRSS of a process, in bytes, or -1.
func rss(pid int) int64 {
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

func mib(n int64) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func envDuration(b *testing.B, name string, fallback time.Duration) time.Duration {
	d, err := time.ParseDuration(envOr(name, fallback.String()))
	if err != nil || d <= 0 {
		b.Fatalf("%s: want a duration such as 30m: %v", name, err)
	}
	return d
}
