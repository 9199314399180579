package engine

// Benchmarks of bridged and warm transfers through kamailio routing the
// person's number to one peer and the callee's to another (testdata/
// kamailio_pbx_bridge.cfg), on loopback.
//
// BenchmarkTransferBridge, BenchmarkTransferWarm: b.N calls one after the
// other, each transferring at once to baresip, which answers and plays a
// tone for a second and a half, then hangs up (the warm one presses 1 as
// soon as its call is established, during a 200 ms whisper). The callee
// is sipp (silent). connect_p50_ms and connect_p95_ms are the time from
// the transfer request to the first frame of the person's audio handed
// to the callee's RTP writer (TransferOutcome.ConnectedAt), on the wall
// clock: the recording's timeline bunches frames sent late, so it cannot
// tell.
//
// BenchmarkConcurrentBridges (run it with -benchtime=1x: one iteration
// is the whole batch, and sipp stops after a minute):
// SWITCHBOARD_BENCH_BRIDGES (default 50)
// calls at once, each bridged to sipp streaming a continuous tone for
// SWITCHBOARD_BENCH_BRIDGE_TALK (default 5s) before it hangs up, each
// recorded. A gap is a run of at least 2 ms (16 samples) of silence
// (|sample| < 64) on the left channel (the person, as the callee hears
// them) from 100 ms after the bridge to 100 ms before the call's end:
// gaps counts them over all calls, gap_frames their length in 20 ms
// frames (rounded up per gap), gapcalls the calls with any. CPU figures
// as BenchmarkConcurrentRecordedCalls's (sipp_cpu is the person's sipp).

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func BenchmarkTransferBridge(b *testing.B) {
	benchTransferConnect(b, Transfer{Method: switchboardv1.TransferByBridge}, false)
}

func BenchmarkTransferWarm(b *testing.B) {
	benchTransferConnect(b, Transfer{Mode: switchboardv1.TransferWarm, Whisper: tone(200 * time.Millisecond),
		AcceptTimeout: 10 * time.Second}, true)
}

// benchTransferConnect places b.N calls that transfer at once with t, and
// reports the time to the callee hearing the person.
func benchTransferConnect(b *testing.B, t Transfer, press bool) {
	callee := startBenchSipp(b, benchMediaPort(), recordRoutedBench(b)...)
	person := siptest.StartBaresip(b, personNumber, tone(1500*time.Millisecond))
	k := startBridgePBX(b, callee.addr, person.Addr)
	e := newEngine(b, EngineConfig{})
	t.To = personNumber
	var connect []time.Duration
	for i := 0; b.Loop(); i++ {
		if press {
			go pressOnCall(b, person, i+1, "1")
		}
		rec := filepath.Join(b.TempDir(), "call.wav")
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		res, err := e.Place(ctx, pbxTrunk(k), CallSpec{From: "+14155550100", To: "+14155550123", RecordPath: rec,
			AllowTransfer: allowAll, MaxDuration: 30 * time.Second, Script: []Step{{Transfer: &t}}})
		cancel()
		if err != nil || res.Transfer == nil || res.Transfer.Result != switchboardv1.TransferBridged {
			b.Fatalf("Place: %v, transfer %+v", err, res.Transfer)
		}
		connect = append(connect, res.Transfer.ConnectedAt.Sub(res.Transfer.RequestedAt))
	}
	slices.Sort(connect)
	b.ReportMetric(float64(percentile(connect, 50).Microseconds())/1000, "connect_p50_ms")
	b.ReportMetric(float64(percentile(connect, 95).Microseconds())/1000, "connect_p95_ms")
}

// pressOnCall has baresip key digits once its n-th call is established.
func pressOnCall(b *testing.B, bs *siptest.Baresip, n int, digits string) {
	for strings.Count(bs.Output(), "Call established") < n {
		select {
		case <-b.Context().Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	for _, d := range digits {
		if err := bs.Command("sndcode", string(d)); err != nil {
			b.Errorf("sndcode %c: %v", d, err)
		}
	}
}

// recordRoutedBench is uas.xml sending back the proxy's Record-Route, as
// recordRouted.
func recordRoutedBench(b *testing.B) []string {
	return siptest.EditedScenario(b, filepath.Join("testdata", "uas.xml"),
		"[last_CSeq:]\n      Contact:", "[last_CSeq:]\n      [last_Record-Route:]\n      Contact:")
}

// streamingPerson is bench_stream.xml streaming the tone for talk, then
// hanging up through the proxy (its BYE takes the route set).
func streamingPerson(b *testing.B, talk time.Duration) []string {
	args := benchScenario(b, "bench_stream.xml", "tone", writeBenchTone(b, time.Second),
		"talk_ms", strconv.Itoa(int(talk.Milliseconds())))
	return siptest.EditedScenario(b, args[1], "CSeq: 1 BYE\n", "CSeq: 1 BYE\n      [routes]\n")
}

func BenchmarkConcurrentBridges(b *testing.B) {
	calls := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_BRIDGES", 50)
	talk := envDuration(b, "SWITCHBOARD_BENCH_BRIDGE_TALK", 5*time.Second)
	callee := startBenchSipp(b, benchMediaPort(), recordRoutedBench(b)...)
	person := startBenchSipp(b, benchMediaPort(), streamingPerson(b, talk)...)
	k := startBridgePBX(b, callee.addr, person.addr)
	e := newEngine(b, EngineConfig{})
	for b.Loop() {
		runBridges(b, e, pbxTrunk(k), person, calls, talk)
	}
}

// runBridges places calls at once, each bridged to the person, and
// reports the gaps in the person's audio and the CPU.
func runBridges(b *testing.B, e *Engine, trunk Trunk, person *benchSipp, calls int, talk time.Duration) {
	dir := b.TempDir()
	cpu := startCPU(b, person)
	results := make([]Result, calls)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(b.Context(), talk+time.Minute)
			defer cancel()
			var err error
			results[i], err = e.Place(ctx, trunk, CallSpec{CallID: fmt.Sprintf("bridge-%d", i), From: "+14155550100",
				To: "+14155550123", RecordPath: filepath.Join(dir, fmt.Sprintf("call-%d.wav", i)), AllowTransfer: allowAll,
				MaxDuration: talk + 30*time.Second, Script: []Step{{Transfer: &Transfer{To: personNumber,
					Method: switchboardv1.TransferByBridge}}}})
			if err != nil {
				b.Errorf("call %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	cpu.report(b, person, calls, "call")
	var gaps, frames, gapCalls int
	for i, res := range results {
		if res.Transfer == nil || res.Transfer.Result != switchboardv1.TransferBridged {
			b.Fatalf("call %d: transfer %+v, want bridged (sipp: %s)", i, res.Transfer, person.errors())
		}
		n, f := bridgeGaps(b, filepath.Join(dir, fmt.Sprintf("call-%d.wav", i)), res)
		gaps, frames = gaps+n, frames+f
		if n > 0 {
			gapCalls++
		}
	}
	b.ReportMetric(float64(gaps), "gaps")
	b.ReportMetric(float64(frames), "gap_frames")
	b.ReportMetric(float64(gapCalls), "gapcalls")
}

// bridgeGaps counts the runs of silence on the left channel of a bridged
// call's recording while the person was heard, and their length in
// frames.
func bridgeGaps(b *testing.B, rec string, res Result) (gaps, frames int) {
	left, _ := readRecording(b, rec)
	from := int((res.Transfer.ConnectedAt.Sub(res.AnsweredAt) + 100*time.Millisecond).Seconds() * sampleRate)
	to := min(len(left), int((res.EndedAt.Sub(res.AnsweredAt)-100*time.Millisecond).Seconds()*sampleRate))
	run := 0
	end := func() {
		if run >= 16 {
			gaps++
			frames += (run + frameSamples - 1) / frameSamples
		}
		run = 0
	}
	for _, s := range left[max(0, from):max(from, to)] {
		if s > -64 && s < 64 {
			run++
			continue
		}
		end()
	}
	end()
	return gaps, frames
}
