package testsupport

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// Measure runs op b.N times and reports its median and 99th percentile
// latency, in milliseconds.
func Measure(b *testing.B, op func() error) {
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	at := func(p float64) float64 {
		return float64(took[int(p*float64(len(took)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// EnvPositive reads a benchmark's positive integer setting from the
// environment, def when unset; anything else fails the benchmark.
func EnvPositive(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
