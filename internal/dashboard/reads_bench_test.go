package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// readsBenchCallsEnv sets how many calls the stored case holds; the
// default makes a quick run, `make bench-reads` stores a million.
const readsBenchCallsEnv = "SWITCHBOARD_READS_BENCH_CALLS"

// The load of issue 24: 64 parallel lists of 1,000 calls and 8 parallel
// overviews, all with one organization's key.
const (
	benchLists     = 64
	benchOverviews = 8
)

// BenchmarkReadMemory measures the memory of the operator's process (the
// REST API and dashboard without reconcilers, as a replica that is not the
// leader runs; the load generator shares the process and reads every body
// into io.Discard) while one organization's key sends 64 parallel
// GET /v1/calls?limit=1000 and 8 parallel dashboard overviews. The calls are archived ones stored in the
// SQLite history store, created over the last 23 hours: 300 calls of
// about 60 KB of metadata and variables each, then many ordinary ones.
// A worker that is answered 429 waits Retry-After and asks again, until
// it has b.N pages or overviews. It reports the Go heap's peak (runtime/metrics, sampled every 2 ms) and
// the process's resident peak (VmHWM, reset before the load), each with
// its level before, and how the requests were answered; any answer other
// than 200 or 429 fails it.
func BenchmarkReadMemory(b *testing.B) {
	suite.Need(b)
	stored := testsupport.BenchCount(b, readsBenchCallsEnv, 20_000)
	for _, c := range []struct {
		name  string
		calls int
		large bool
	}{{"calls=300-maximal", 300, true}, {fmt.Sprintf("calls=%d", stored), stored, false}} {
		o := newOrg(b)
		seedRecentCalls(b, o.ns, c.calls, c.large)
		session := signInClient(b, o.key)
		b.Run(c.name, func(b *testing.B) {
			runtime.GC()
			before := readMemory()
			peak := sampleMemory()
			answers := readLoad(b, o.key, session.http, b.N)
			heapPeak, rssPeak := peak()
			b.ReportMetric(mib(before.heap), "heap_before_MiB")
			b.ReportMetric(mib(heapPeak), "heap_peak_MiB")
			b.ReportMetric(mib(before.rss), "rss_before_MiB")
			b.ReportMetric(mib(rssPeak), "rss_peak_MiB")
			for name, n := range answers.counts() {
				b.ReportMetric(float64(n), name)
			}
		})
	}
}

// seedRecentCalls stores n archived calls of ns created over the last 23
// hours (so the overview counts them all), each carrying about 60 KB of
// metadata and variables when large: the limits allow 16 KiB of metadata
// and 1 KiB per variable, and a create body of 64 KiB.
func seedRecentCalls(b *testing.B, ns string, n int, large bool) {
	b.Helper()
	start, span := time.Now().Add(-23*time.Hour), 23*time.Hour
	began := time.Now()
	for i := range n {
		c := testsupport.BenchCall(ns, i)
		at := start.Add(span / time.Duration(n) * time.Duration(i)).UTC()
		c.CreationTimestamp = metav1.NewTime(at.Truncate(time.Second))
		c.Annotations[switchboardv1.AcceptedAtAnnotation] = at.Format(time.RFC3339Nano)
		if large {
			c.Spec.Metadata, c.Spec.Variables = largeMetadata, largeVariables
		}
		if err := store.SaveCall(context.Background(), c); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("stored %d calls in %s", n, time.Since(began).Round(time.Second))
}

var (
	largeMetadata  = &apiextensionsv1.JSON{Raw: []byte(`{"notes":"` + strings.Repeat("m", 16_000) + `"}`)}
	largeVariables = func() *apiextensionsv1.JSON {
		vars := make([]string, 44)
		for i := range vars {
			vars[i] = fmt.Sprintf(`"v%02d":"%s"`, i, strings.Repeat("v", 1000))
		}
		return &apiextensionsv1.JSON{Raw: []byte("{" + strings.Join(vars, ",") + "}")}
	}()
)

// answers counts the statuses of each kind of request.
type answers struct {
	mu sync.Mutex
	by map[string]int
}

func (a *answers) add(kind string, status int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.by[kind+"_"+strconv.Itoa(status)]++
}

func (a *answers) counts() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.by
}

// readLoad runs the lists and overviews at once, each worker n requests.
func readLoad(b *testing.B, key string, session *http.Client, n int) *answers {
	b.Helper()
	got := &answers{by: map[string]int{}}
	lists := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchLists}}
	var wg sync.WaitGroup
	var failed atomic.Value
	// Each worker gets n answers of 200, waiting Retry-After after a 429
	// as a client should, so that the organization's reads stay at their
	// bound throughout.
	worker := func(kind string, c *http.Client, req func() *http.Request) {
		defer wg.Done()
		for ok := 0; ok < n; {
			status, wait, err := readAllOf(c, req())
			if err == nil && status != http.StatusOK && status != http.StatusTooManyRequests {
				err = fmt.Errorf("%s answered %d", kind, status)
			}
			if err != nil {
				failed.Store(err)
				return
			}
			got.add(kind, status)
			if status == http.StatusOK {
				ok++
			}
			time.Sleep(wait)
		}
	}
	b.ResetTimer()
	for range benchLists {
		wg.Add(1)
		go worker("lists", lists, func() *http.Request {
			req, _ := http.NewRequest(http.MethodGet, baseURL+"/v1/calls?limit=1000", nil) //nolint:noctx // benchmark
			req.Header.Set("Authorization", "Bearer "+key)
			return req
		})
	}
	for range benchOverviews {
		wg.Add(1)
		go worker("overviews", session, func() *http.Request {
			req, _ := http.NewRequest(http.MethodGet, baseURL+"/dashboard/", nil) //nolint:noctx // benchmark
			return req
		})
	}
	wg.Wait()
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return got
}

// readAllOf sends req and reads its whole body, as a client would; wait
// is its Retry-After.
func readAllOf(c *http.Client, req *http.Request) (status int, wait time.Duration, err error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	_, err = io.Copy(io.Discard, resp.Body)
	seconds, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return resp.StatusCode, time.Duration(seconds) * time.Second, err
}

type memory struct{ heap, rss uint64 }

const heapObjects = "/memory/classes/heap/objects:bytes"

// readMemory is the live heap and the resident size now.
func readMemory() memory {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return memory{heap: s[0].Value.Uint64(), rss: procStatus("VmRSS")}
}

// sampleMemory starts sampling the heap every 2 ms and resets the
// resident peak (VmHWM); the function it returns stops and gives both
// peaks.
func sampleMemory() func() (heap, rss uint64) {
	// Writing 5 to clear_refs resets VmHWM to the current resident size.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	done, stopped := make(chan struct{}), make(chan uint64)
	go func() {
		var most uint64
		s := []metrics.Sample{{Name: heapObjects}}
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			most = max(most, s[0].Value.Uint64())
			select {
			case <-done:
				stopped <- most
				return
			case <-t.C:
			}
		}
	}()
	return func() (uint64, uint64) {
		close(done)
		return <-stopped, procStatus("VmHWM")
	}
}

// procStatus reads a kB field of /proc/self/status, in bytes (0 if absent).
func procStatus(field string) uint64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func mib(bytes uint64) float64 { return float64(bytes) / (1 << 20) }
