package engine

import (
	"context"
	"encoding/binary"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// The custom headers reach the callee on the INVITE: sipp fails the call
// unless both are there with their values.
func TestCustomHeadersOnInvite(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "headers.xml")...)
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{CallID: "call-h", Script: sayTone(200 * time.Millisecond),
		Headers: []Header{{Name: "X-Account", Value: "acme-42"}, {Name: "X-Campaign-Id", Value: "spring sale"}}})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want answered, agent hangup", res)
	}
}

// Headers that break the rules (a line break would forge a header of its
// own), and keys that are not keys, fail the call before it is dialed.
func TestCustomHeadersRefusedBeforeDialing(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	_, err := e.Place(t.Context(), Trunk{Address: "sip:127.0.0.1:" + strconv.Itoa(freePort(t, "udp"))},
		CallSpec{From: "+14155550100", To: "+14155550123", Script: []Step{{Press: &PressDigits{Digits: "1x"}}}})
	if err == nil || !strings.Contains(err.Error(), "press") {
		t.Errorf("press 1x: error %v, want the step refused", err)
	}
	for _, h := range []Header{
		{Name: "X-Account", Value: "a\r\nVia: forged"},
		{Name: "Route", Value: "<sip:elsewhere>"},
		{Name: "X-Switchboard-Call-ID", Value: "spoofed"},
		{Name: "X-Long", Value: strings.Repeat("v", 257)},
	} {
		// Nothing listens there: a call that went out would be
		// unreachable, not refused.
		_, err := e.Place(t.Context(), Trunk{Address: "sip:127.0.0.1:" + strconv.Itoa(freePort(t, "udp"))},
			CallSpec{From: "+14155550100", To: "+14155550123", Headers: []Header{h}})
		if err == nil || !strings.Contains(err.Error(), "custom SIP header") {
			t.Errorf("header %+v: error %v, want the header refused", h, err)
		}
	}
}

// A pressDigits step on a trunk whose DTMF is info sends each key as a SIP
// INFO (application/dtmf-relay) in the dialog, in order: the sipp callee
// fails the call on anything else.
func TestPressDigitsBySIPInfo(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "info_digits.xml", "invite_regexp", "INVITE")...)
	res := place(t, e, Trunk{Address: "sip:" + s.addr, DTMF: "info"}, CallSpec{Script: []Step{
		{Text: "a tone", Audio: tone(200 * time.Millisecond)},
		{Press: &PressDigits{Digits: "1w2#", Delay: 100 * time.Millisecond}},
	}})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want answered, agent hangup", res)
	}
	assertTranscript(t, res, []Event{{Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "a tone"}},
		{Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "pressed 1w2#"}}})
	if !res.Events[1].Note {
		t.Errorf("event %+v: want the engine's note", res.Events[1])
	}
}

// A pressDigits step on an RFC 4733 trunk sends telephone events the far
// end decodes to the keys, in order, after the step's audio.
func TestPressDigitsByTelephoneEvents(t *testing.T) {
	rtp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rtp.Close() })
	keys := make(chan string, 1)
	go func() { keys <- readTelephoneEvents(rtp) }()

	e := newEngine(t, EngineConfig{})
	port := rtp.LocalAddr().(*net.UDPAddr).Port
	s := startSipp(t, "udp", scenario(t, "rtp_digits.xml", "rtp_port", strconv.Itoa(port))...)
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Script: []Step{
		{Text: "a tone", Audio: tone(200 * time.Millisecond), Press: &PressDigits{Digits: "9*w0#"}},
	}})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want answered, agent hangup", res)
	}
	assertTranscript(t, res, []Event{{Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "a tone"}},
		{Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "pressed 9*w0#"}}})
	_ = rtp.SetReadDeadline(time.Now().Add(time.Second)) // the call is over
	if got := <-keys; got != "9*0#" {
		t.Errorf("the far end decoded %q, want 9*0#", got)
	}
}

// readTelephoneEvents decodes the RFC 4733 events (payload type 101) of
// the RTP arriving on conn until it is closed or times out, as a phone
// menu would.
func readTelephoneEvents(conn net.PacketConn) string {
	var d dtmfDecoder
	var keys strings.Builder
	buf := make([]byte, 1500)
	for {
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			return keys.String()
		}
		p := buf[:n]
		if n < 12 || p[1]&0x7f != 101 {
			continue
		}
		if k, ok := d.decode(binary.BigEndian.Uint32(p[8:]), binary.BigEndian.Uint32(p[4:]), p[12:]); ok {
			keys.WriteByte(k)
		}
	}
}

// A key that is not one fails the press before any key is sent; w pauses.
func TestPressChecksDigitsFirst(t *testing.T) {
	var k recordingKeypad
	if err := press(t.Context(), &k, "12x3", time.Hour); err == nil || len(k.keys) != 0 {
		t.Errorf("press 12x3: error %v, keys %q: want an error at once and no key sent", err, k.keys)
	}
	if err := press(t.Context(), &k, "1w#", 0); err != nil || string(k.keys) != "1#" {
		t.Errorf("press 1w#: error %v, keys %q: want 1#", err, k.keys)
	}
	if err := press(t.Context(), nil, "1", time.Hour); err == nil {
		t.Error("press without a keypad: want an error")
	}
}

type recordingKeypad struct{ keys []rune }

func (k *recordingKeypad) key(_ context.Context, d rune) error {
	k.keys = append(k.keys, d)
	return nil
}

// pressingModel greets, keys digits once the greeting is spoken
// (press_digit) and ends the call.
type pressingModel struct{ chunks chan conversation.Chunk }

func (p *pressingModel) open(context.Context, conversation.CallDetails) (conversation.Session, error) {
	p.chunks = make(chan conversation.Chunk, 1)
	p.chunks <- conversation.Chunk{Content: "Billing, please.", Digits: "12#", EndCall: true, Complete: true}
	return p, nil
}

func (p *pressingModel) Chunks() <-chan conversation.Chunk      { return p.chunks }
func (p *pressingModel) Settings() <-chan conversation.Settings { return nil }
func (p *pressingModel) Update([]conversation.Message, string)  {}
func (p *pressingModel) Request(conversation.Request)           {}
func (p *pressingModel) Err() error                             { return nil }
func (p *pressingModel) Close() error                           { return nil }

// toneSpeaker says every text as a short tone.
type toneSpeaker struct{}

func (toneSpeaker) Speak(context.Context, string) ([]int16, error) {
	return tone(300 * time.Millisecond), nil
}

// A conversation's press_digit keys through the same keypad: by SIP INFO
// on a trunk whose DTMF is info, seen by the sipp callee in order.
func TestConversationPressesDigitsBySIPInfo(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "info_digits.xml", "invite_regexp", "INVITE")...)
	m := &pressingModel{}
	res := place(t, e, Trunk{Address: "sip:" + s.addr, DTMF: "info"}, CallSpec{
		Conversation: &Conversation{Open: m.open, Config: quickConversation(), Voice: toneSpeaker{},
			Call: conversation.CallDetails{CallID: "call_test"}}})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want answered, agent hangup", res)
	}
	if !slices.ContainsFunc(res.Events, func(ev Event) bool { return ev.Text == "pressed 12#" && ev.Note }) {
		t.Errorf("transcript %+v: want the note pressed 12#", res.Events)
	}
}
