package engine

// BenchmarkTransferRefer: b.N calls one after the other, each
// transferring the callee by REFER at once, through the kamailio PBX of
// the tests (testdata/kamailio_pbx.cfg) on loopback. It reports the p50
// and p95 time from the transfer request (TransferOutcome.RequestedAt) to
// the final NOTIFY 200 (ConnectedAt), which is when the callee hears the
// person: the REFER, its 202, and the transferee's report of the person's
// answer.
//
//   - sipp: the callee is sipp (testdata/refer_notify.xml) answering the
//     REFER and sending NOTIFY 100, then, once that was answered, NOTIFY
//     200: three round trips through the proxy, sipp's scheduling
//     included, and no call to a person.
//   - baresip: the callee is baresip, which acts on the REFER: it calls the
//     person (a sipp that answers at once) through the PBX and sends the
//     NOTIFY 200 once that call is up, the whole path. Between transfers,
//     untimed, it hangs up its call to the person.
//
// failed counts the calls whose transfer did not end transferred.
// Run: go test ./internal/telephony/sip/engine/ -run '^$' -bench TransferRefer -benchtime 100x

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

func BenchmarkTransferRefer(b *testing.B) {
	b.Run("sipp", func(b *testing.B) {
		callee := startBenchSipp(b, benchMediaPort(), benchScenario(b, "refer_notify.xml",
			"final", "200 OK", "ring_ms", "0")...)
		benchRefer(b, startPBX(b, callee.addr, "").Addr, nil)
	})
	b.Run("baresip", func(b *testing.B) {
		target := startBenchSipp(b, benchMediaPort(), benchScenario(b, "uas.xml")...)
		// A short voice: baresip hangs up its call to the person when it
		// ends, so that calls do not pile up.
		callee := siptest.StartBaresip(b, "+14155550123", tone(200*time.Millisecond))
		// baresip takes 4 calls at once.
		benchRefer(b, startPBX(b, callee.Addr, target.addr).Addr, func(i int) { hangupPerson(b, callee, i+1) })
	})
}

// benchRefer places b.N calls through the PBX at pbx, each transferring
// to person at once, and reports the transfer's p50 and p95.
func benchRefer(b *testing.B, pbx string, between func(i int)) {
	e := newEngine(b, EngineConfig{})
	trunk := Trunk{Address: "sip:" + pbx}
	var took []time.Duration
	failed := 0
	b.ResetTimer()
	for i := range b.N {
		c := CallSpec{CallID: "bench-" + strconv.Itoa(i), From: "+14155550100", To: "+14155550123",
			MaxDuration: 30 * time.Second, Headers: []Header{{Name: "X-Campaign", Value: "spring"}},
			Script:        []Step{{Transfer: &Transfer{To: person, RingTimeout: 5 * time.Second}}},
			AllowTransfer: func(context.Context, string) error { return nil }}
		res, err := e.Place(b.Context(), trunk, c)
		tr := res.Transfer
		if err != nil || tr == nil || tr.Result != switchboardv1.TransferTransferred {
			if failed++; failed <= 3 {
				b.Logf("call %d: %v, transfer %+v", i, err, tr)
			}
			continue
		}
		took = append(took, tr.ConnectedAt.Sub(tr.RequestedAt))
		if between != nil {
			b.StopTimer()
			between(i)
			b.StartTimer()
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(failed), "failed")
	if len(took) == 0 {
		return
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "p95_ms")
}

// hangupPerson has baresip hang up its call to the person, the n-th, and
// waits until it did.
func hangupPerson(b *testing.B, callee *siptest.Baresip, n int) {
	if err := callee.Command("hangup", ""); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(callee.Output(), "call: terminate call") < n {
		if time.Now().After(deadline) {
			b.Fatalf("baresip did not hang up its call to the person:\n%s", callee.Output())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
