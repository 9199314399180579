package engine

import (
	"bytes"
	"encoding/binary"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// te is one telephone-event packet: RTP timestamp, event code, end bit and
// duration.
type te struct {
	ts       uint32
	event    byte
	end      bool
	duration uint16
}

func (p te) payload() []byte {
	flags := byte(10) // volume
	if p.end {
		flags |= 0x80
	}
	return []byte{p.event, flags, byte(p.duration >> 8), byte(p.duration)}
}

// dtmfEvent is the packets a sender sends for one key pressed at ts:
// starts, updates, and the end packet three times.
func dtmfEvent(ts uint32, event byte, firstDuration uint16) []te {
	return []te{
		{ts, event, false, firstDuration},
		{ts, event, false, 320},
		{ts, event, false, 480},
		{ts, event, true, 800},
		{ts, event, true, 800},
		{ts, event, true, 800},
	}
}

func TestDTMFDecoder(t *testing.T) {
	cat := func(seqs ...[]te) []te {
		var all []te
		for _, s := range seqs {
			all = append(all, s...)
		}
		return all
	}
	for _, tc := range []struct {
		name    string
		packets []te
		want    string
	}{
		{"zero-duration first packet", dtmfEvent(1000, 1, 0), "1"},
		{"first packet with a duration", dtmfEvent(1000, 11, 160), "#"},
		{"only the end packets came", dtmfEvent(1000, 10, 0)[3:], "*"},
		{"end retransmitted three times", cat(dtmfEvent(1000, 5, 0)[3:], dtmfEvent(1000, 5, 0)[3:]), "5"},
		{"the same key twice in a row", cat(dtmfEvent(1000, 7, 0), dtmfEvent(2600, 7, 0)), "77"},
		{"every key", cat(
			dtmfEvent(0, 0, 0), dtmfEvent(2000, 1, 0), dtmfEvent(4000, 2, 0), dtmfEvent(6000, 3, 0),
			dtmfEvent(8000, 4, 0), dtmfEvent(10000, 5, 0), dtmfEvent(12000, 6, 0), dtmfEvent(14000, 7, 0),
			dtmfEvent(16000, 8, 0), dtmfEvent(18000, 9, 0), dtmfEvent(20000, 10, 0), dtmfEvent(22000, 11, 0)),
			"0123456789*#"},
		// The next key's first packets overtake the previous key's last end
		// retransmit, which must not count again.
		{"out of order", []te{
			{1000, 2, false, 0}, {1000, 2, true, 800}, {1000, 2, true, 800},
			{2600, 3, false, 0}, {1000, 2, true, 800}, {2600, 3, false, 160},
			{2600, 3, true, 800}, {2600, 3, true, 800}, {1000, 2, true, 800}, {2600, 3, true, 800},
		}, "23"},
		{"flash and malformed packets are no keys", []te{{1000, 16, false, 0}, {2000, 200, true, 800}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d dtmfDecoder
			got := ""
			for _, p := range tc.packets {
				if k, ok := d.decode(0x1234, p.ts, p.payload()); ok {
					got += string(k)
				}
			}
			if got != tc.want {
				t.Errorf("keys %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("short payload", func(t *testing.T) {
		var d dtmfDecoder
		if k, ok := d.decode(1, 1, []byte{1, 0}); ok {
			t.Errorf("key %q from a 2-byte payload", k)
		}
	})
}

// writeDTMFPcap writes a pcap of the RTP telephone-event packets (payload
// type 101) of keys, pressed one after the other from 500 ms on, as a
// sender that starts each event with a zero-duration packet sends them:
// start, updates every 20 ms, then the end packet three times.
func writeDTMFPcap(t *testing.T, keys string) string {
	t.Helper()
	var pcap []byte
	le := binary.LittleEndian
	pcap = le.AppendUint32(pcap, 0xa1b2c3d4)
	pcap = le.AppendUint16(pcap, 2)
	pcap = le.AppendUint16(pcap, 4)
	pcap = le.AppendUint32(pcap, 0)     // time zone
	pcap = le.AppendUint32(pcap, 0)     // accuracy
	pcap = le.AppendUint32(pcap, 65535) // snaplen
	pcap = le.AppendUint32(pcap, 1)     // Ethernet
	var seq uint16
	// Half a second of PCMU silence first: sipp replays packets relative to
	// the first one (it ignores the capture's start time), and keys sent
	// before the first gather has started are dropped by design.
	at := time.Duration(0)
	for ; at < 500*time.Millisecond; at += 20 * time.Millisecond {
		rtp := []byte{0x80, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78}
		binary.BigEndian.PutUint16(rtp[2:], seq)
		binary.BigEndian.PutUint32(rtp[4:], uint32(at/time.Millisecond*8)) //nolint:gosec // small
		pcap = appendUDPPacket(pcap, at, append(rtp, bytes.Repeat([]byte{0xFF}, 160)...))
		seq++
	}
	for i := range len(keys) {
		ts := uint32(8000 + i*2400)
		for j, p := range dtmfEvent(ts, byte(strings.IndexByte(dtmfKeys, keys[i])), 0) {
			rtp := []byte{0x80, 101, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78}
			if j == 0 {
				rtp[1] |= 0x80 // marker: start of an event
			}
			binary.BigEndian.PutUint16(rtp[2:], seq)
			binary.BigEndian.PutUint32(rtp[4:], ts)
			pcap = appendUDPPacket(pcap, at, append(rtp, p.payload()...))
			seq++
			at += 20 * time.Millisecond
		}
		at += 100 * time.Millisecond
	}
	path := filepath.Join(t.TempDir(), "dtmf.pcap")
	if err := os.WriteFile(path, pcap, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// appendUDPPacket appends a pcap record of an Ethernet/IPv4/UDP packet
// carrying payload, captured at at.
func appendUDPPacket(pcap []byte, at time.Duration, payload []byte) []byte {
	be, le := binary.BigEndian, binary.LittleEndian
	udp := be.AppendUint16(nil, 6000) // ports: sipp sends to the call's media port
	udp = be.AppendUint16(udp, 6002)
	udp = be.AppendUint16(udp, uint16(8+len(payload))) //nolint:gosec // small
	udp = be.AppendUint16(udp, 0)                      // no checksum
	udp = append(udp, payload...)
	ip := []byte{0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1}
	be.PutUint16(ip[2:], uint16(20+len(udp))) //nolint:gosec // small
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(be.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	be.PutUint16(ip[10:], ^uint16(sum))
	frame := make([]byte, 12, 14+len(ip)+len(udp)) // MAC addresses
	frame = append(be.AppendUint16(frame, 0x0800), ip...)
	frame = append(frame, udp...)
	pcap = le.AppendUint32(pcap, uint32(at/time.Second))
	pcap = le.AppendUint32(pcap, uint32(at%time.Second/time.Microsecond))
	pcap = le.AppendUint32(pcap, uint32(len(frame))) //nolint:gosec // small
	pcap = le.AppendUint32(pcap, uint32(len(frame))) //nolint:gosec // small
	return append(pcap, frame...)
}

// sipp plays RTP telephone-events whose first packet has duration 0, the
// same key twice in a row among them, end packets sent three times: each
// key counts once, and NumDigits ends the gather.
func TestGatherDigitsFromSippEvents(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", editedScenario(t, "uas.xml",
		"RTP/AVP 0\n      a=rtpmap:0 PCMU/8000", "RTP/AVP 0 101\n      a=rtpmap:0 PCMU/8000\n      a=rtpmap:101 telephone-event/8000\n      a=fmtp:101 0-16",
		`<recv request="ACK"/>`, `<recv request="ACK"/><nop><action><exec play_pcap_audio="`+writeDTMFPcap(t, "1229")+`"/></action></nop>`)...)
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Script: []Step{
		{Text: "Your code?", Gather: &Gather{Field: "code", NumDigits: 3, Timeout: 5 * time.Second}},
		{Text: "Again?", Gather: &Gather{Field: "again", NumDigits: 1, Timeout: 5 * time.Second}},
	}})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want answered, agent hangup", res)
	}
	if want := map[string]string{"code": "122", "again": "9"}; !maps.Equal(res.Digits, want) {
		t.Errorf("digits %v, want %v", res.Digits, want)
	}
	assertTranscript(t, res, []Event{{Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "Your code?"}}, {Turn: telephony.Turn{Speaker: SpeakerCallee, Text: "pressed 122"}},
		{Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "Again?"}}, {Turn: telephony.Turn{Speaker: SpeakerCallee, Text: "pressed 9"}}})
}
