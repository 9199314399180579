package engine

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"testing"
	"time"

	diagomedia "github.com/emiago/diago/media"
	sipmsg "github.com/emiago/sipgo/sip"
)

// A worker behind its own load balancer (config/README.md, "SIP and RTP
// on each replica") binds a fixed SIP port and RTP range and announces
// the balancer's address: the INVITE a carrier receives must name that
// address and port in Via and Contact, and offer media at that address on
// a port of the range, or the carrier's answers and audio go nowhere.
func TestInviteAnnouncesExternalAddressAndPorts(t *testing.T) {
	t.Cleanup(func() { diagomedia.RTPPortStart, diagomedia.RTPPortEnd = 0, 0 })
	sipPort := freePort(t, "udp")
	rtp := PortRange{First: 41000, Last: 41009}
	e := newEngine(t, EngineConfig{ExternalHost: "203.0.113.7", BindPort: sipPort, RTPPorts: rtp})

	// The carrier: a UDP socket that reads the INVITE as sent.
	carrier, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = carrier.Close() }()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	placed := make(chan error, 1)
	go func() {
		_, err := e.Place(ctx, Trunk{Address: "sip:" + carrier.LocalAddr().String()},
			CallSpec{From: "+14155550100", To: "+14155550123", MaxDuration: 5 * time.Second})
		placed <- err
	}()
	buf := make([]byte, 65535)
	_ = carrier.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, from, err := carrier.ReadFrom(buf)
	if err != nil {
		t.Fatalf("no INVITE reached the carrier: %v", err)
	}
	cancel()
	t.Logf("Place, cancelled once the INVITE was read: %v", <-placed)
	msg, err := sipmsg.ParseMessage(buf[:n])
	if err != nil {
		t.Fatalf("parse %q: %v", buf[:n], err)
	}
	req, ok := msg.(*sipmsg.Request)
	if !ok || req.Method != sipmsg.INVITE {
		t.Fatalf("first message is not an INVITE:\n%s", buf[:n])
	}
	if got := from.(*net.UDPAddr).Port; got != sipPort {
		t.Errorf("INVITE sent from port %d, want the SIP port %d", got, sipPort)
	}
	if via := req.Via(); via.Host != "203.0.113.7" || via.Port != sipPort {
		t.Errorf("Via sent-by %s:%d, want 203.0.113.7:%d", via.Host, via.Port, sipPort)
	}
	if c := req.Contact(); c == nil || c.Address.Host != "203.0.113.7" || c.Address.Port != sipPort {
		t.Errorf("Contact %v, want sip:...@203.0.113.7:%d", c, sipPort)
	}
	sdp := string(req.Body())
	if !regexp.MustCompile(`(?m)^c=IN IP4 203\.0\.113\.7\r?$`).MatchString(sdp) {
		t.Errorf("SDP does not offer media at 203.0.113.7:\n%s", sdp)
	}
	m := regexp.MustCompile(`(?m)^m=audio (\d+) `).FindStringSubmatch(sdp)
	if m == nil {
		t.Fatalf("SDP has no audio:\n%s", sdp)
	}
	if port, _ := strconv.Atoi(m[1]); port < rtp.First || port > rtp.Last || port%2 != 0 {
		t.Errorf("media offered on port %d, want an even port in %s", port, rtp)
	}
}

func TestParsePortRange(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  PortRange
		calls int
		bad   bool
	}{
		{in: "", want: PortRange{}},
		{in: "20000-20399", want: PortRange{20000, 20399}, calls: 200},
		{in: "20000-20001", want: PortRange{20000, 20001}, calls: 1},
		{in: "20001-20400", bad: true}, // odd first port: RTP goes on even ports
		{in: "20000-20400", bad: true}, // odd number of ports
		{in: "20000", bad: true},
		{in: "80-99", bad: true},
		{in: "65534-65537", bad: true},
		{in: "20400-20000", bad: true},
		{in: "a-b", bad: true},
	} {
		got, err := ParsePortRange(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParsePortRange(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want || got.Calls() != tc.calls || got.String() != tc.in {
			t.Errorf("ParsePortRange(%q) = %v (%d calls, %q), %v; want %v (%d calls)", tc.in, got, got.Calls(), got, err, tc.want, tc.calls)
		}
	}
}
