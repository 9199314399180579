package sip

import "testing"

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
