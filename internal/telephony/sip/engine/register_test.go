package engine

import (
	"strings"
	"testing"
	"time"

	sipmsg "github.com/emiago/sipgo/sip"

	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

// registrar423 answers the first REGISTER 423 Interval Too Brief
// (Min-Expires 7200), and the second, which must ask for 7200 on the same
// Call-ID, 200 with our Contact granted for 7200 s.
const registrar423 = `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="registrar asking for a longer interval">
  <recv request="REGISTER"/>
  <send><![CDATA[
SIP/2.0 423 Interval Too Brief
[last_Via:]
[last_From:]
[last_To:];tag=[pid]SIPpTag01[call_number]
[last_Call-ID:]
[last_CSeq:]
Min-Expires: 7200
Content-Length: 0

]]></send>
  <recv request="REGISTER">
    <action><ereg regexp="7200" search_in="hdr" header="Expires:" check_it="true" assign_to="1"/></action>
  </recv>
  <send><![CDATA[
SIP/2.0 200 OK
[last_Via:]
[last_From:]
[last_To:];tag=[pid]SIPpTag01[call_number]
[last_Call-ID:]
[last_CSeq:]
[last_Contact:];expires=7200
X-Asked: [$1]
Content-Length: 0

]]></send>
</scenario>
`

// A registrar that finds our interval too brief gets the one it asks for,
// and the 200's Contact says what it granted.
func TestRegisterIntervalTooBrief(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", siptest.InlineScenario(t, registrar423)...)
	r := e.NewRegistrant(Trunk{}, Registration{Registrar: "sip:" + s.addr, User: "alice", Expires: time.Hour})
	res := r.Register(t.Context())
	s.wait(t)
	if res.Err != nil || res.StatusCode != 200 || res.Granted != 2*time.Hour {
		t.Fatalf("result %+v: want 200 granting the 7200 s asked for", res)
	}
}

func TestJudgeRegister(t *testing.T) {
	var ours sipmsg.ContactHeader
	ours.Address = sipmsg.Uri{Scheme: "sip", User: "switchboard", Host: "192.0.2.10", Port: 5060}
	for _, tc := range []struct {
		name        string
		status      int
		creds       bool
		headers     []sipmsg.Header
		auth        bool
		granted     time.Duration
		errContains string
	}{
		{"challenged without credentials", 401, false, nil, true, 0, "none are configured"},
		{"challenged again", 407, true, nil, true, 0, "refused the credentials (407"},
		{"forbidden", 403, true, nil, true, 0, "refused us (403"},
		{"server error", 503, true, nil, false, 0, "answered REGISTER with 503"},
		{"granted by Expires", 200, true, []sipmsg.Header{sipmsg.NewHeader("Expires", "600")}, false, 10 * time.Minute, ""},
		{"granted to our contact", 200, true, []sipmsg.Header{
			sipmsg.NewHeader("Expires", "600"),
			contactExpiring(sipmsg.Uri{Scheme: "sip", User: "other", Host: "192.0.2.99"}, "30"),
			contactExpiring(ours.Address, "120"),
		}, false, 2 * time.Minute, ""},
		{"nothing said", 200, true, nil, false, time.Hour, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := sipmsg.NewResponse(tc.status, "Reason")
			for _, h := range tc.headers {
				res.AppendHeader(h)
			}
			r := judgeRegister(res, tc.creds, ours, time.Hour)
			if r.AuthFailed != tc.auth || r.Granted != tc.granted || !r.Reachable {
				t.Errorf("result %+v: want auth failed %v, granted %s", r, tc.auth, tc.granted)
			}
			if (tc.errContains == "") != (r.Err == nil) || (r.Err != nil && !strings.Contains(r.Err.Error(), tc.errContains)) {
				t.Errorf("error %v, want one containing %q", r.Err, tc.errContains)
			}
		})
	}
}

func contactExpiring(u sipmsg.Uri, secs string) *sipmsg.ContactHeader {
	p := sipmsg.NewParams()
	p.Add("expires", secs)
	return &sipmsg.ContactHeader{Address: u, Params: p}
}
