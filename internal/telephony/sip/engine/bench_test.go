package engine

// Benchmarks of the call engine against sipp on this machine (make
// bench-sip). sipp shares the CPU with the engine, so its CPU time is read
// from /proc/<pid>/stat and reported apart from ours.
//
// BenchmarkCallAttempts: b.N calls, SWITCHBOARD_BENCH_SIP_CONCURRENCY
// (default 200) in flight at a time, to one sipp that rejects every INVITE
// at once with 486 (busy, testdata/bench_busy.xml), or answers, streams a
// tone for SWITCHBOARD_BENCH_SIP_ANSWERED_TALK (default 1s) and hangs up
// while we record (answered, testdata/bench_stream.xml). The callers
// start 5 ms apart. It reports call attempts per second (attempts/s, from
// the first start to the last end, ramp included; steady_attempts/s, the
// attempts that ended once all callers had started, over that time, when
// that lasted a second or more), Place's p50 and p99 duration, our CPU per
// attempt and sipp's. With 486s the callers finish before the ramp does;
// with answers, 200 callers holding each call 1 s cap the rate near 195/s
// (raise SWITCHBOARD_BENCH_SIP_CONCURRENCY to find the engine's limit).
//
// BenchmarkConcurrentRecordedCalls: SWITCHBOARD_BENCH_SIP_CALLS (default
// 200) answered calls started at SWITCHBOARD_BENCH_SIP_RATE calls per
// second (default 50), each recording a stereo WAV to a temporary
// directory. sipp (testdata/bench_stream.xml) answers, streams a
// continuous 320 Hz PCMU tone from its own RTP port for
// SWITCHBOARD_BENCH_SIP_TALK (default 20s) and hangs up; the engine, with
// no prompt, sends silence and listens until that BYE. Run it with
// -benchtime=1x: one iteration is the whole batch. The recordings go to a
// temporary directory, or to SWITCHBOARD_BENCH_SIP_KEEP to keep them.
//
// An audio gap is a run of at least 2 ms (16 samples) of digital silence
// (|sample| < 64) on the callee channel of a recording, between 1 s after
// its first sound and 1 s before its end. The tone never falls under 1000,
// so such a run is audio the recorder did not get in time: the recorder
// places the callee's packets by their arrival time and pads with silence
// when one arrives more than 40 ms (two frames) after where the previous
// one ended. gaps counts them over all calls, gap_ms is their total
// length, gapcalls the number of calls with any. A gap after which the
// tone resumes in phase lost no audio: it arrived late (jitter or a
// stall of sipp, the kernel or us). A gap after which the phase jumped
// (gaps_lost_audio) also lost packets: a lost 20 ms packet shifts the
// 25-sample period of the tone by 10 samples (five in a row, 100 ms, would
// pass for late). A lost packet with no gap (less than 40 ms of
// accumulated lateness) is not counted. udp_drops is the number of
// datagrams the kernel dropped on our sockets (full receive buffers).
// max_wakeup_delay_ms is how late a 5 ms timer goroutine of this process
// woke up at worst: a stall that hits every call's reader. Gaps on the
// sending side (late writes of our own RTP) are not measured: the engine
// exposes no hook for it.
//
// Memory: peak_rss_MB is VmHWM of this test process minus VmRSS before the
// batch; heap_MB the peak of runtime HeapInuse sampled every 100 ms, minus
// the heap before the batch; both also per call. CPU: getrusage(SELF) user
// + system before and after, per call; sipp's utime + stime from
// /proc/<pid>/stat (USER_HZ is 100 on Linux); cpu_% and sipp_cpu_% are of
// one core. machine_busy_% (of all cores) and steal_% come from
// /proc/stat: a machine busier than the engine and sipp account for was
// running something else, and its figures (gaps above all) are not clean.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zaf/g711"

	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// benchSipp is sipp running for a benchmark, until the benchmark ends.
type benchSipp struct {
	*siptest.Sipp
	addr string
}

// startBenchSipp starts sipp as a callee for any number of calls on a
// loopback UDP port, with media ports from mediaPort on, a large socket
// buffer (a burst of INVITEs overflows the default) and its errors logged.
func startBenchSipp(b *testing.B, mediaPort int, args ...string) *benchSipp {
	b.Helper()
	s := siptest.StartSipp(b, "udp", append([]string{"-mp", strconv.Itoa(mediaPort),
		"-trace_err", "-buff_size", "4194304"}, args...)...)
	return &benchSipp{Sipp: s, addr: s.Addr}
}

// errors is the start of sipp's error log (-trace_err): the first errors.
func (s *benchSipp) errors() string {
	logs, _ := filepath.Glob(filepath.Join(s.Dir, "*_errors.log"))
	var out []byte
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		out = append(out, b...)
	}
	return string(out[:min(len(out), 3000)])
}

// cpu is the CPU time sipp used so far (user + system).
func (s *benchSipp) cpu(b *testing.B) time.Duration { return pidCPU(b, s.Pid()) }

// pidCPU is the CPU time process pid used so far (user + system).
func pidCPU(b *testing.B, pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("the CPU time of process %d: %v", pid, err)
	}
	// The fields after the command name, which is in parentheses: utime
	// and stime are fields 14 and 15 of the line, 12 and 13 after ")".
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * time.Second / 100
}

// benchMediaPort is the first of sipp's media ports: below the kernel's
// ephemeral range, where the engine's RTP sockets are, so that they never
// collide.
func benchMediaPort() int { return 20000 + 2*rand.IntN(2500) }

// benchScenario returns sipp's -sf argument for testdata/name with each
// [key] of kv replaced by its value (sipp reads rtp_stream files when it
// loads the scenario, before any -key applies).
func benchScenario(b *testing.B, name string, kv ...string) []string {
	src, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		b.Fatal(err)
	}
	s := string(src)
	for i := 0; i+1 < len(kv); i += 2 {
		s = strings.ReplaceAll(s, "["+kv[i]+"]", kv[i+1])
	}
	path := filepath.Join(b.TempDir(), name)
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		b.Fatal(err)
	}
	return []string{"-sf", path}
}

// envDuration reads a duration setting, def when unset.
func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}

// selfCPU is the CPU time this process used so far (user + system).
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStatusKB reads a "kB" field of /proc/self/status (VmRSS, VmHWM).
func procStatusKB(b *testing.B, field string) int {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kb
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// machineCPU reads the busy, steal and total jiffies of all CPUs from
// /proc/stat: how loaded the machine was, and how much the hypervisor took.
func machineCPU(b *testing.B) (busy, steal, total int) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line)[1:] // user nice system idle iowait irq softirq steal ...
	for i, v := range f[:min(8, len(f))] {
		n, _ := strconv.Atoi(v)
		total += n
		if i != 3 && i != 4 {
			busy += n
		}
		if i == 7 {
			steal = n
		}
	}
	return busy, steal, total
}

// cpuMeter measures the CPU time of this process, of sipp and of the
// machine over a span.
type cpuMeter struct {
	self0, sipp0          time.Duration
	busy0, steal0, total0 int
	wall0                 time.Time
}

func startCPU(b *testing.B, s *benchSipp) cpuMeter {
	m := cpuMeter{self0: selfCPU(b), sipp0: s.cpu(b), wall0: time.Now()}
	m.busy0, m.steal0, m.total0 = machineCPU(b)
	return m
}

// report adds the CPU figures per unit (call or attempt) and the share of
// one core each side used (cpu_%, sipp_cpu_%: 100 is one core).
func (m cpuMeter) report(b *testing.B, s *benchSipp, n int, unit string) {
	wall := time.Since(m.wall0)
	self, sipp := selfCPU(b)-m.self0, s.cpu(b)-m.sipp0
	b.ReportMetric(float64(self.Microseconds())/float64(n), "cpu_us/"+unit)
	b.ReportMetric(float64(sipp.Microseconds())/float64(n), "sipp_cpu_us/"+unit)
	b.ReportMetric(100*self.Seconds()/wall.Seconds(), "cpu_%")
	b.ReportMetric(100*sipp.Seconds()/wall.Seconds(), "sipp_cpu_%")
	busy, steal, total := machineCPU(b)
	if total > m.total0 {
		// Of all cores: 100 is the whole machine.
		b.ReportMetric(100*float64(busy-m.busy0)/float64(total-m.total0), "machine_busy_%")
		b.ReportMetric(100*float64(steal-m.steal0)/float64(total-m.total0), "steal_%")
	}
}

// BenchmarkCallAttempts measures how many call attempts per second the
// engine completes against a callee that answers at once: busy rejects
// every INVITE with 486; answered answers, streams audio for
// SWITCHBOARD_BENCH_SIP_ANSWERED_TALK (default 1s) while we record it,
// and hangs up, so that an attempt includes media and recording set-up.
func BenchmarkCallAttempts(b *testing.B) {
	b.Run("busy", func(b *testing.B) {
		benchAttempts(b, 486, "", benchScenario(b, "bench_busy.xml"))
	})
	b.Run("answered", func(b *testing.B) {
		talk := envDuration(b, "SWITCHBOARD_BENCH_SIP_ANSWERED_TALK", time.Second)
		benchAttempts(b, 200, b.TempDir(), benchScenario(b, "bench_stream.xml",
			"tone", writeBenchTone(b, time.Second), "talk_ms", strconv.Itoa(int(talk.Milliseconds()))))
	})
}

// rampStep is how far apart the callers of benchAttempts start.
const rampStep = 5 * time.Millisecond

// attemptRates are the attempts per second from the first start to the
// last end, and once all callers had started (steady, 0 when less than a
// second of it): the attempts that ended after the ramp over that time.
// ended holds when each ended.
func attemptRates(ended []time.Duration, ramp time.Duration) (all, steady float64) {
	last, n := time.Duration(0), 0
	for _, e := range ended {
		last = max(last, e)
		if e > ramp {
			n++
		}
	}
	all = float64(len(ended)) / last.Seconds()
	if last-ramp >= time.Second {
		steady = float64(n) / (last - ramp).Seconds()
	}
	return all, steady
}

// benchAttempts places b.N calls, SWITCHBOARD_BENCH_SIP_CONCURRENCY at a
// time, to a sipp playing scenario, each expected to end with status;
// recordDir, if set, receives a recording of each.
func benchAttempts(b *testing.B, status int, recordDir string, scenario []string) {
	conc := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_SIP_CONCURRENCY", 200)
	s := startBenchSipp(b, benchMediaPort(), scenario...)
	e, err := NewEngine(b.Context(), EngineConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	trunk := Trunk{Address: "sip:" + s.addr}

	var next, failed atomic.Int64
	latencies, ended := make([]time.Duration, b.N), make([]time.Duration, b.N)
	cpu := startCPU(b, s)
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range min(conc, b.N) {
		wg.Go(func() {
			// The callers start 5 ms apart, as a dialer's would,
			// rather than all at once: sipp's scenarios abort a call on the
			// INVITE retransmissions such a burst causes.
			time.Sleep(time.Duration(w) * rampStep)
			for i := int(next.Add(1)) - 1; i < b.N; i = int(next.Add(1)) - 1 {
				c := CallSpec{CallID: fmt.Sprintf("bench-%d", i), From: "+14155550100", To: "+14155550123", MaxDuration: time.Minute}
				if recordDir != "" {
					c.RecordPath = filepath.Join(recordDir, c.CallID+".wav")
				}
				start := time.Now()
				res, err := e.Place(b.Context(), trunk, c)
				latencies[i], ended[i] = time.Since(start), time.Since(cpu.wall0)
				if err != nil || res.Outcome.StatusCode != status {
					if failed.Add(1) <= 3 {
						b.Logf("call %d: %v (%+v)", i, err, res)
					}
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	all, steady := attemptRates(ended, time.Duration(min(conc, b.N))*rampStep)
	b.ReportMetric(all, "attempts/s")
	if steady > 0 {
		b.ReportMetric(steady, "steady_attempts/s")
	}
	b.ReportMetric(float64(failed.Load()), "failed")
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99_ms")
	cpu.report(b, s, b.N, "attempt")
	if failed.Load() > 0 {
		b.Logf("sipp's errors:\n%s", s.errors())
	}
}

// The benchmark tone: 320 Hz, a period of 25 samples, so that a 1 s file
// loops seamlessly while a lost 20 ms packet (160 samples) breaks its
// phase; the phase offset keeps every sample at least 1000 away from zero,
// so silence on the callee channel is never the tone.
const tonePeriod = 25

// toneSample is sample i of the tone as the recording holds it (after a
// PCMU round trip).
func toneSample(i int) int16 {
	s := 8000 * math.Sin(2*math.Pi*float64(i%tonePeriod)/tonePeriod+math.Pi/25)
	return g711.DecodeUlawFrame(g711.EncodeUlawFrame(int16(s)))
}

// writeBenchTone writes d of the tone as raw PCMU, which sipp streams as
// is.
func writeBenchTone(b *testing.B, d time.Duration) string {
	ulaw := make([]byte, int(d.Seconds()*sampleRate))
	for i := range ulaw {
		ulaw[i] = g711.EncodeUlawFrame(toneSample(i))
	}
	path := filepath.Join(b.TempDir(), "tone.ulaw")
	if err := os.WriteFile(path, ulaw, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// tonePhase is the phase of the tone at pcm[0], or -1 when pcm (at least a
// period long) is not the tone.
func tonePhase(pcm []int16) int {
	for p := range tonePeriod {
		match := len(pcm) >= tonePeriod
		for k := 0; k < tonePeriod && match; k++ {
			match = pcm[k] == toneSample(p+k)
		}
		if match {
			return p
		}
	}
	return -1
}

// procWatch samples the Go heap every 100 ms, and the drop counters of this
// process's UDP sockets every second, until stopped. The kernel drops a
// datagram when a socket's receive buffer is full: a dropped RTP packet
// is audio lost before the engine could read it.
type procWatch struct {
	stop  chan struct{}
	done  chan struct{}
	peak  uint64
	drops map[string]int // per socket inode, the last count seen
}

func watchProcess() *procWatch {
	m := &procWatch{stop: make(chan struct{}), done: make(chan struct{}), drops: map[string]int{}}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			m.peak = max(m.peak, ms.HeapInuse)
			if i%10 == 0 {
				m.sampleDrops()
			}
			select {
			case <-m.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return m
}

// sampleDrops notes the drop counts of the UDP sockets this process has
// open (sockets closed since keep their last count).
func (m *procWatch) sampleDrops() {
	fds, _ := os.ReadDir("/proc/self/fd")
	ours := map[string]bool{}
	for _, fd := range fds {
		if link, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(link, "socket:[") {
			ours[strings.Trim(link[len("socket:"):], "[]")] = true
		}
	}
	table, _ := os.ReadFile("/proc/net/udp")
	for line := range strings.Lines(string(table)) {
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
		f := strings.Fields(line)
		if len(f) < 13 || !ours[f[9]] {
			continue
		}
		n, _ := strconv.Atoi(f[12])
		m.drops[f[9]] = n
	}
}

// end stops sampling and returns the peak heap and the datagrams dropped.
func (m *procWatch) end() (heap uint64, drops int) {
	close(m.stop)
	<-m.done
	for _, n := range m.drops {
		drops += n
	}
	return m.peak, drops
}

// stallWatch measures how late a goroutine of this process wakes up for a
// 5 ms tick: a late wake-up of 40 ms or more (GC, scheduler, CPU starved
// by sipp) delays the engine's RTP readers alike, and would explain gaps
// that all calls have at the same moment.
type stallWatch struct {
	stop, done chan struct{}
	worst      time.Duration
	stalls     []string // when the wake-ups late by 40 ms or more were
}

func watchStalls() *stallWatch {
	w := &stallWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		const period = 5 * time.Millisecond
		last := time.Now()
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(period):
			}
			now := time.Now()
			late := now.Sub(last) - period
			w.worst = max(w.worst, late)
			if late >= 40*time.Millisecond {
				w.stalls = append(w.stalls, fmt.Sprintf("%s (%d ms)", now.Format("15:04:05.000"), late.Milliseconds()))
			}
			last = now
		}
	}()
	return w
}

// end stops watching and reports the worst wake-up delay.
func (w *stallWatch) end(b *testing.B) {
	close(w.stop)
	<-w.done
	b.ReportMetric(float64(w.worst.Microseconds())/1000, "max_wakeup_delay_ms")
	if len(w.stalls) > 0 {
		b.Logf("wake-ups late by 40 ms or more: %v", w.stalls)
	}
}

// callRun is one call of the recorded-calls benchmark.
type callRun struct {
	res Result
	err error
	rec string
}

// The gap finder itself: a silence after which the tone resumes in phase
// is a late gap, one after a skipped 20 ms packet is a lost one.
func TestBenchGapFinder(t *testing.T) {
	tone := make([]int16, 4*sampleRate)
	for i := range tone {
		tone[i] = toneSample(i)
	}
	silence := make([]int16, 400)
	late := slices.Concat(tone[:2*sampleRate], silence, tone[2*sampleRate:])
	lost := slices.Concat(tone[:2*sampleRate], silence, tone[2*sampleRate+frameSamples:])
	for _, tc := range []struct {
		name string
		pcm  []int16
		lost bool
	}{{"late", late, false}, {"lost", lost, true}} {
		path := filepath.Join(t.TempDir(), "rec.wav")
		data := audio.Header(2, len(tc.pcm))
		for _, s := range tc.pcm {
			data = binary.LittleEndian.AppendUint32(data, uint32(uint16(s))<<16) //nolint:gosec // intended reinterpretation
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		gaps, _, err := recordingGaps(path)
		if err != nil || len(gaps) != 1 || gaps[0].length != len(silence) || gaps[0].lost != tc.lost {
			t.Errorf("%s: gaps %+v, %v; want one of %d samples, lost %v", tc.name, gaps, err, len(silence), tc.lost)
		}
	}
}

// BenchmarkConcurrentRecordedCalls holds many answered, recorded calls at
// once and reports how many overlapped, what each cost and the audio gaps
// in the recordings.
func BenchmarkConcurrentRecordedCalls(b *testing.B) {
	calls := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_SIP_CALLS", 200)
	rate := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_SIP_RATE", 50)
	talk := envDuration(b, "SWITCHBOARD_BENCH_SIP_TALK", 20*time.Second)
	tone := writeBenchTone(b, time.Second)
	s := startBenchSipp(b, benchMediaPort(), benchScenario(b, "bench_stream.xml",
		"tone", tone, "talk_ms", strconv.Itoa(int(talk.Milliseconds())))...)
	e, err := NewEngine(b.Context(), EngineConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	for range b.N {
		runRecordedBatch(b, e, s, calls, rate, talk, "")
	}
}

// runRecordedBatch places calls at rate per second, waits for them all,
// and reports the figures of the batch. With botURL, the calls stream to
// that bot (BenchmarkConcurrentStreamedCalls).
func runRecordedBatch(b *testing.B, e *Engine, s *benchSipp, calls, rate int, talk time.Duration, botURL string) {
	dir := os.Getenv("SWITCHBOARD_BENCH_SIP_KEEP") // to listen to them afterwards
	if dir == "" {
		dir = b.TempDir()
	}
	runtime.GC()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	rss0 := procStatusKB(b, "VmRSS")
	proc := watchProcess()
	stalls := watchStalls()
	cpu := startCPU(b, s)

	runs := make([]callRun, calls)
	var wg sync.WaitGroup
	pace := time.NewTicker(time.Second / time.Duration(rate))
	for i := range runs {
		if i > 0 {
			<-pace.C
		}
		runs[i].rec = filepath.Join(dir, fmt.Sprintf("call-%d.wav", i))
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(b.Context(), talk+time.Minute)
			defer cancel()
			runs[i].res, runs[i].err = e.Place(ctx, Trunk{Address: "sip:" + s.addr}, CallSpec{
				CallID: fmt.Sprintf("bench-%d", i), From: "+14155550100", To: "+14155550123",
				MaxDuration: talk + 30*time.Second, RecordPath: runs[i].rec, Stream: benchStream(botURL, i),
			})
		})
	}
	pace.Stop()
	wg.Wait()
	b.StopTimer()
	cpu.report(b, s, calls, "call")
	stalls.end(b)
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(ms1.NumGC-ms0.NumGC), "gc_cycles")
	heapPeak, drops := proc.end()
	b.ReportMetric(float64(drops), "udp_drops")
	hwm := procStatusKB(b, "VmHWM")
	reportMemory(b, calls, rss0, hwm, ms0.HeapInuse, heapPeak)
	reportCalls(b, runs)
	reportGaps(b, runs)
	if botURL != "" {
		reportBotGaps(b, runs)
	}
	b.StartTimer()
}

// reportMemory reports the peak memory of the batch, in all and per call.
func reportMemory(b *testing.B, calls, rss0KB, hwmKB int, heap0, heapPeak uint64) {
	rss := float64(hwmKB-rss0KB) / 1024
	heap := float64(heapPeak-min(heap0, heapPeak)) / (1 << 20)
	b.ReportMetric(rss, "peak_rss_MB")
	b.ReportMetric(1024*rss/float64(calls), "rss_KB/call")
	b.ReportMetric(heap, "heap_MB")
	b.ReportMetric(1024*heap/float64(calls), "heap_KB/call")
}

// reportCalls reports how many calls were answered, ended by the callee
// as they should, and overlapped at most (from their answer and end
// times).
func reportCalls(b *testing.B, runs []callRun) {
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	answered, byCallee := 0, 0
	for i, r := range runs {
		if r.err != nil && i < 5 {
			b.Logf("call %d: %v (%+v)", i, r.err, r.res)
		}
		if !r.res.Answered {
			continue
		}
		answered++
		if r.res.HangupBy == HangupByCallee && r.err == nil {
			byCallee++
		} else if byCallee+5 > answered {
			b.Logf("call %d ended %s after %s: %v", i, r.res.HangupBy, r.res.EndedAt.Sub(r.res.AnsweredAt), r.err)
		}
		edges = append(edges, edge{r.res.AnsweredAt, 1}, edge{r.res.EndedAt, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		return edges[i].at.Before(edges[j].at) || edges[i].at.Equal(edges[j].at) && edges[i].d < edges[j].d
	})
	peak, cur := 0, 0
	for _, e := range edges {
		cur += e.d
		peak = max(peak, cur)
	}
	b.ReportMetric(float64(answered), "answered")
	b.ReportMetric(float64(byCallee), "ended_by_callee")
	b.ReportMetric(float64(peak), "peak_concurrent")
}

// Gap detection thresholds (see the file comment).
const (
	gapLevel   = 64
	gapSamples = 16 // 2 ms
)

// gap is an audio gap in a recording.
type gap struct {
	at     time.Duration // from the start of the recording
	length int           // samples
	// lost is set when the tone does not resume in phase after the gap:
	// audio was lost, not only late.
	lost bool
}

// reportGaps reads every recording and reports the audio gaps on the
// callee channel.
func reportGaps(b *testing.B, runs []callRun) {
	var gaps, lost, gapTotal, gapCalls, checked int
	byInstant := map[string][]string{} // the calls whose first gap began then
	for _, r := range runs {
		if !r.res.Answered {
			continue
		}
		found, n, err := recordingGaps(r.rec)
		if err != nil {
			b.Errorf("%s: %v", filepath.Base(r.rec), err)
			continue
		}
		checked += n
		if len(found) == 0 {
			continue
		}
		gapCalls++
		for _, g := range found {
			gaps++
			gapTotal += g.length
			if g.lost {
				lost++
			}
		}
		// Which calls, and when on the clock: whether the gaps of many
		// calls cluster (a stall of a whole process, or of one of sipp's
		// RTP threads, each of which streams for 20 consecutive calls).
		at := r.res.AnsweredAt.Add(found[0].at).Format("15:04:05.00")
		byInstant[at] = append(byInstant[at], strings.TrimSuffix(filepath.Base(r.rec), ".wav"))
	}
	for at, calls := range byInstant {
		b.Logf("gaps at %s in %d calls: %s", at, len(calls), strings.Join(calls, " "))
	}
	b.ReportMetric(float64(gaps), "gaps")
	b.ReportMetric(float64(lost), "gaps_lost_audio")
	b.ReportMetric(float64(gapTotal)*1000/sampleRate, "gap_ms")
	b.ReportMetric(float64(gapCalls), "gapcalls")
	b.ReportMetric(float64(checked)/sampleRate, "checked_audio_s")
}

// recordingGaps finds the gaps on the callee (right) channel of a
// recording, from 1 s after its first sound to 1 s before its end, and
// the number of samples it checked.
func recordingGaps(path string) ([]gap, int, error) {
	right, err := readCalleeChannel(path)
	if err != nil {
		return nil, 0, err
	}
	gaps, n := toneGaps(right)
	return gaps, n, nil
}

// toneGaps finds the gaps in a channel carrying the bench tone, from 1 s
// after its first sound to 1 s before its end, and the number of samples
// it checked.
func toneGaps(right []int16) ([]gap, int) {
	first := 0
	for first < len(right) && abs(int(right[first])) < gapLevel {
		first++
	}
	from, to := first+sampleRate, len(right)-sampleRate
	var gaps []gap
	run := 0
	for i := from; i <= to; i++ {
		if i < to && abs(int(right[i])) < gapLevel {
			run++
			continue
		}
		if run >= gapSamples {
			gaps = append(gaps, gap{
				at:     time.Duration(i-run) * time.Second / sampleRate,
				length: run,
				lost:   !resumesInPhase(right, i-run, i),
			})
		}
		run = 0
	}
	return gaps, max(0, to-from)
}

// resumesInPhase reports whether the tone after the silence pcm[start:end]
// continues where it stopped before it.
func resumesInPhase(pcm []int16, start, end int) bool {
	if start < tonePeriod || end+tonePeriod > len(pcm) {
		return false
	}
	before, after := tonePhase(pcm[start-tonePeriod:start]), tonePhase(pcm[end:end+tonePeriod])
	return before >= 0 && after == before // a whole number of periods before
}

// readCalleeChannel reads the right channel of a stereo 16-bit WAV.
func readCalleeChannel(path string) ([]int16, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	_, right, err := audio.DecodeStereo(f)
	return right, err
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
