package engine

// dtmfDecoder turns RFC 4733 telephone-event packets into key presses.
//
// All packets of one event carry the event's RTP timestamp (its start):
// the first ones, the updates with a growing duration and the end packet,
// which senders repeat three times. The decoder reports a key on the first
// packet it sees of an event, whatever its duration (some senders start
// with duration 0, which diago v0.31.0 misses) and whether or not it is
// the end packet (the first ones may be lost), and ignores the event's
// other packets. Events are told apart by SSRC and timestamp, so the same
// key pressed twice is two events, and a late retransmit of an earlier
// event is not reported again.
type dtmfDecoder struct {
	// seen are the last events reported, oldest overwritten first: enough
	// to outlast any reordering, while bounded.
	seen [16]dtmfEventID
	next int
}

type dtmfEventID struct {
	ssrc, timestamp uint32
	valid           bool
}

// telephone-event codes of the keys (RFC 4733 3.2).
const dtmfKeys = "0123456789*#ABCD"

// decode returns the key of a telephone-event packet (of RTP source ssrc
// and RTP timestamp timestamp) that starts an event, and false for the
// other packets of an event and for what is not a key (flash, malformed
// payloads). The end bit and duration do not matter.
func (d *dtmfDecoder) decode(ssrc, timestamp uint32, payload []byte) (byte, bool) {
	if len(payload) < 4 || int(payload[0]) >= len(dtmfKeys) {
		return 0, false
	}
	id := dtmfEventID{ssrc: ssrc, timestamp: timestamp, valid: true}
	for _, s := range d.seen {
		if s == id {
			return 0, false
		}
	}
	d.seen[d.next] = id
	d.next = (d.next + 1) % len(d.seen)
	return dtmfKeys[payload[0]], true
}
