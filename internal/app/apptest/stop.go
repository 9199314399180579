package apptest

// POST /v1/calls/{call_id}/stop: a call not yet dialed fails as canceled
// and is never dialed; a ringing or answered call is hung up (the
// simulator, and SIP CANCEL or BYE to real sipp callees) and ends as
// api_hangup with the disposition observed, its recording and events as
// for any ended call.

import (
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
)

// SlowCarrier rings for 3 s and talks for 20 s: long enough to stop a call
// in either state.
var SlowCarrier = sim.Timings{Ring: 3 * time.Second, Talk: 20 * time.Second, Voicemail: 20 * time.Second}

func (o *Org) StopCall(t *testing.T, id string) Response {
	t.Helper()
	return Do(t, "POST", "/v1/calls/"+id+"/stop", o.Key, nil)
}
