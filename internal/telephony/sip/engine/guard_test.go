package engine

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// production is the policy of a replica without --dev or private networks.
var production = AddressGuard{Allow: egress.URLPolicy{}.AllowedAddr}

// loopbackTrunks is a policy that allows 127.0.0.1, where the test's sipp
// listens, as an operator's declared private network would, and refuses
// every other address the production policy refuses.
var loopbackTrunks = AddressGuard{Allow: egress.URLPolicy{
	Trusted: egress.TrustedHosts{Networks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}}.AllowedAddr}

// udpCounter counts the datagrams sent to a UDP port on addr.
type udpCounter struct {
	conn    net.PacketConn
	packets atomic.Int32
	done    chan struct{}
}

func countUDP(t *testing.T, addr string) *udpCounter {
	t.Helper()
	conn, err := (&net.ListenConfig{}).ListenPacket(t.Context(), "udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &udpCounter{conn: conn, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		buf := make([]byte, 2048)
		for {
			if _, _, err := conn.ReadFrom(buf); err != nil {
				return
			}
			c.packets.Add(1)
		}
	}()
	t.Cleanup(func() { _ = conn.Close() })
	return c
}

// count closes the listener and returns what it received: loopback
// delivers at once, so a datagram sent before this is counted.
func (c *udpCounter) count() int32 {
	_ = c.conn.Close()
	<-c.done
	return c.packets.Load()
}

func (c *udpCounter) port() int { return c.conn.LocalAddr().(*net.UDPAddr).Port }

// A trunk on loopback gets no OPTIONS and no INVITE outside --dev, and the
// refusal says what is refused, not what a connection did.
func TestGuardRefusesLoopbackTrunk(t *testing.T) {
	e := newEngine(t, EngineConfig{Guard: production})
	listener := countUDP(t, "127.0.0.1:0")
	trunk := Trunk{Address: "sip:127.0.0.1:" + strconv.Itoa(listener.port())}

	r := e.Probe(t.Context(), trunk)
	if !r.Refused || r.Reachable || r.Err == nil || r.Err.Error() != "the trunk's host 127.0.0.1 is a loopback address" {
		t.Errorf("probe %+v: want refused as a loopback address", r)
	}
	res, err := e.Place(t.Context(), trunk, CallSpec{From: "+14155550100", To: "+14155550123"})
	var refused *AddressError
	if !errors.As(err, &refused) || res.Answered || res.Outcome.StatusCode != 0 {
		t.Errorf("Place: %+v, %v: want an *AddressError and nothing placed", res, err)
	}
	if n := listener.count(); n != 0 {
		t.Errorf("%d datagrams sent to the refused trunk", n)
	}
}

// A name is judged by what it resolves to, and the engine sends to the
// address it checked: a name that answers a public address to the check
// and loopback afterwards (DNS rebinding) never reaches loopback.
func TestGuardChecksResolvedAddresses(t *testing.T) {
	listener := countUDP(t, "127.0.0.1:0")
	port := strconv.Itoa(listener.port())

	loopback := &fakeDNS{answers: [][]netip.Addr{{netip.MustParseAddr("127.0.0.1")}}}
	e := newEngine(t, EngineConfig{Guard: AddressGuard{Allow: production.Allow, Resolver: loopback}})
	r := e.Probe(t.Context(), Trunk{Address: "sip:pbx.example.com:" + port})
	if !r.Refused || r.Err.Error() != "the trunk's host pbx.example.com resolves to a loopback address" {
		t.Errorf("probe %+v: want refused, without the address the name resolves to", r)
	}

	// The public address is one nobody answers at from here.
	rebinding := &fakeDNS{answers: [][]netip.Addr{{netip.MustParseAddr("93.184.216.34")}, {netip.MustParseAddr("127.0.0.1")}}}
	e = newEngine(t, EngineConfig{Guard: AddressGuard{Allow: production.Allow, Resolver: rebinding}, NoResponseTimeout: time.Second})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	res, err := e.Place(ctx, Trunk{Address: "sip:pbx.example.com:" + port}, CallSpec{From: "+14155550100", To: "+14155550123"})
	if err != nil || !res.Outcome.TransportError {
		t.Errorf("Place: %+v, %v: want the public address unreachable", res, err)
	}
	if n := rebinding.lookups.Load(); n != 1 {
		t.Errorf("%d lookups, want 1: the INVITE goes to the address checked", n)
	}
	if n := listener.count(); n != 0 {
		t.Errorf("%d datagrams reached loopback through the rebinding name", n)
	}
}

// fakeDNS answers each lookup with the next of answers (the last one
// again once they run out), and has no SRV records.
type fakeDNS struct {
	answers [][]netip.Addr
	lookups atomic.Int32
}

func (f *fakeDNS) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	n := int(f.lookups.Add(1)) - 1
	return f.answers[min(n, len(f.answers)-1)], nil
}

func (f *fakeDNS) LookupSRV(context.Context, string, string, string) (string, []*net.SRV, error) {
	return "", nil, errors.New("no SRV records")
}

// A trunk in a network the operator declared is probed and called as any
// public one.
func TestGuardAllowsDeclaredNetwork(t *testing.T) {
	e := newEngine(t, EngineConfig{Guard: loopbackTrunks})
	s := startSipp(t, "udp", scenario(t, "options.xml", "status", "200", "reason", "OK")...)
	if r := e.Probe(t.Context(), Trunk{Address: "sip:" + s.addr}); !r.Healthy() {
		t.Errorf("probe %+v: want healthy", r)
	}
	s.wait(t)
	s = startSipp(t, "udp", "-sn", "uas")
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Script: sayTone(200 * time.Millisecond)})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Errorf("result %+v: want answered and hung up by the agent", res)
	}
}

// An answer whose SDP points the call's RTP at a refused address is hung
// up at once: nothing is sent there, and the call says why.
func TestGuardRefusesAnswerMediaAddress(t *testing.T) {
	e := newEngine(t, EngineConfig{Guard: loopbackTrunks})
	// 127.0.0.2 is loopback too, but not in the declared network.
	media := countUDP(t, "127.0.0.2:0")
	s := startSipp(t, "udp", editedScenario(t, "uas.xml",
		"c=IN IP[media_ip_type] [media_ip]", "c=IN IP4 127.0.0.2",
		"m=audio [media_port] ", "m=audio "+strconv.Itoa(media.port())+" ")...)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := e.Place(ctx, Trunk{Address: "sip:" + s.addr},
		CallSpec{From: "+14155550100", To: "+14155550123", Script: sayTone(time.Second)})
	s.wait(t) // sipp got its ACK and BYE
	var refused *AddressError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "media address 127.0.0.2 is a loopback address") {
		t.Errorf("Place error %v: want the media address refused", err)
	}
	if !res.Answered || res.HangupBy != HangupByAddressRefused || res.DisconnectionReason() != "address_refused" ||
		res.Disposition() != telephony.Answered {
		t.Errorf("result %+v: want answered and hung up, address_refused", res)
	}
	if n := media.count(); n != 0 {
		t.Errorf("%d RTP datagrams sent to the refused media address", n)
	}
}

// Without a policy (--dev), the same answer's media goes where it says.
func TestGuardOffSendsMediaAnywhere(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	media := countUDP(t, "127.0.0.2:0")
	s := startSipp(t, "udp", editedScenario(t, "uas.xml",
		"c=IN IP[media_ip_type] [media_ip]", "c=IN IP4 127.0.0.2",
		"m=audio [media_port] ", "m=audio "+strconv.Itoa(media.port())+" ")...)
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Script: sayTone(200 * time.Millisecond)})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Errorf("result %+v: want answered", res)
	}
	if n := media.count(); n == 0 {
		t.Error("no RTP reached the answer's media address")
	}
}

// A re-INVITE that moves the media to a refused address ends the call:
// the audio stops, and the call says why. diago applies the new address
// before it tells the engine, so one frame may be on its way already, and
// the engine's BYE may cross its answer to the re-INVITE.
func TestGuardEndsCallWhenMediaMovesToRefusedAddress(t *testing.T) {
	e := newEngine(t, EngineConfig{Guard: loopbackTrunks})
	media := countUDP(t, "127.0.0.2:0")
	s := startSipp(t, "udp", scenario(t, "media_moves.xml",
		"moved_ip", "127.0.0.2", "moved_port", strconv.Itoa(media.port()))...)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := e.Place(ctx, Trunk{Address: "sip:" + s.addr},
		CallSpec{From: "+14155550100", To: "+14155550123", Script: sayTone(5 * time.Second)})
	s.wait(t)
	if err != nil {
		t.Errorf("Place: %v", err)
	}
	if !res.Answered || res.HangupBy != HangupByAddressRefused || res.EndedAt.Sub(res.AnsweredAt) >= 5*time.Second {
		t.Errorf("result %+v: want the call hung up, address_refused, before its 5 s prompt ended", res)
	}
	if n := media.count(); n > 1 {
		t.Errorf("%d RTP datagrams sent to the refused media address, want at most the frame in flight", n)
	}
}
