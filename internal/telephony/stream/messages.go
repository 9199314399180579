// Package stream bridges a call's audio to the organization's own voice
// bot over a WebSocket, speaking Twilio's bidirectional Media Streams
// protocol (<Connect><Stream>), so that a bot written for Twilio, such as
// one built on Pipecat's TwilioFrameSerializer, works unchanged.
//
// The messages follow Twilio's reference,
// https://www.twilio.com/docs/voice/media-streams/websocket-messages, and
// what Pipecat's serializer reads and writes
// (github.com/pipecat-ai/pipecat, src/pipecat/serializers/twilio.py: it
// reads start.streamSid and start.callSid, media.payload and dtmf.digit,
// and writes media, mark and clear with streamSid). The golden files in
// testdata are the reference's examples with our identifiers.
package stream

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strconv"
)

// Event names of the protocol.
const (
	EventConnected = "connected"
	EventStart     = "start"
	EventMedia     = "media"
	EventDTMF      = "dtmf"
	EventMark      = "mark"
	EventStop      = "stop"
	EventClear     = "clear"
)

// Tracks: Switchboard sends the callee's audio only, as Twilio's
// bidirectional streams do.
const (
	trackInbound = "inbound"
	// dtmfTrack is Twilio's spelling on dtmf messages (not "inbound").
	dtmfTrack = "inbound_track"
)

// Connected is the first message of a stream.
type Connected struct {
	Event    string `json:"event"`
	Protocol string `json:"protocol"`
	Version  string `json:"version"`
}

// Start describes the stream; it follows Connected.
type Start struct {
	Event          string    `json:"event"`
	SequenceNumber string    `json:"sequenceNumber"`
	Start          StartInfo `json:"start"`
	StreamSid      string    `json:"streamSid"`
}

// StartInfo is Start's start object.
type StartInfo struct {
	AccountSid       string            `json:"accountSid"`
	StreamSid        string            `json:"streamSid"`
	CallSid          string            `json:"callSid"`
	Tracks           []string          `json:"tracks"`
	CustomParameters map[string]string `json:"customParameters"`
	MediaFormat      MediaFormat       `json:"mediaFormat"`
}

// MediaFormat is always mu-law, 8 kHz, mono.
type MediaFormat struct {
	Encoding   string `json:"encoding"`
	SampleRate int    `json:"sampleRate"`
	Channels   int    `json:"channels"`
}

// Media carries 20 ms of the callee's audio. appendMedia writes the same
// bytes without allocating; the struct is the documentation and the
// golden test's reference.
type Media struct {
	Event          string    `json:"event"`
	SequenceNumber string    `json:"sequenceNumber"`
	Media          MediaInfo `json:"media"`
	StreamSid      string    `json:"streamSid"`
}

// MediaInfo is Media's media object. Chunk counts from 1; Timestamp is
// milliseconds since the stream started; Payload is base64 mu-law.
type MediaInfo struct {
	Track     string `json:"track"`
	Chunk     string `json:"chunk"`
	Timestamp string `json:"timestamp"`
	Payload   string `json:"payload"`
}

// DTMF is a key the callee pressed.
type DTMF struct {
	Event          string   `json:"event"`
	StreamSid      string   `json:"streamSid"`
	SequenceNumber string   `json:"sequenceNumber"`
	DTMF           DTMFInfo `json:"dtmf"`
}

// DTMFInfo is DTMF's dtmf object.
type DTMFInfo struct {
	Track string `json:"track"`
	Digit string `json:"digit"`
}

// Mark echoes a bot's mark once the audio sent before it has played (or
// was cleared).
type Mark struct {
	Event          string   `json:"event"`
	SequenceNumber string   `json:"sequenceNumber"`
	StreamSid      string   `json:"streamSid"`
	Mark           MarkInfo `json:"mark"`
}

// MarkInfo is a mark's mark object.
type MarkInfo struct {
	Name string `json:"name"`
}

// Stop is the last message: the call ended.
type Stop struct {
	Event          string   `json:"event"`
	SequenceNumber string   `json:"sequenceNumber"`
	StreamSid      string   `json:"streamSid"`
	Stop           StopInfo `json:"stop"`
}

// StopInfo is Stop's stop object.
type StopInfo struct {
	AccountSid string `json:"accountSid"`
	CallSid    string `json:"callSid"`
}

// Inbound is any message from the bot: media (media.payload, base64
// mu-law of any length), mark (mark.name) or clear. Other events are
// ignored, as Twilio ignores them.
type Inbound struct {
	Event     string `json:"event"`
	StreamSid string `json:"streamSid"`
	Media     struct {
		Payload string `json:"payload"`
	} `json:"media"`
	Mark MarkInfo `json:"mark"`
}

// IDs are the Twilio-shaped identifiers of one call's stream: two letters
// and 32 hex digits, derived from Switchboard's ids so that the same call
// always has the same ones and a bot's logs map back to the call
// (customParameters.call_id carries the call id itself).
type IDs struct {
	// AccountSid (AC...) derives from the organization (namespace).
	AccountSid string
	// CallSid (CA...) and StreamSid (MZ...) derive from the call id.
	CallSid, StreamSid string
}

// NewIDs returns the identifiers of the call callID of organization
// namespace.
func NewIDs(namespace, callID string) IDs {
	return IDs{
		AccountSid: sid("AC", "organization:"+namespace),
		CallSid:    sid("CA", "call:"+callID),
		StreamSid:  sid("MZ", "stream:"+callID),
	}
}

func sid(prefix, of string) string {
	sum := sha256.Sum256([]byte(of))
	return prefix + hex.EncodeToString(sum[:16])
}

// appendMedia appends the JSON of a Media message to b: the hot path, one
// message every 20 ms per call, so it is written by hand rather than
// marshalled (no allocation once b has grown). Every value is digits,
// base64 or an identifier, none of which JSON escapes.
func appendMedia(b []byte, seq, chunk, timestampMs int64, streamSid string, mulaw []byte) []byte {
	b = append(b, `{"event":"media","sequenceNumber":"`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `","media":{"track":"inbound","chunk":"`...)
	b = strconv.AppendInt(b, chunk, 10)
	b = append(b, `","timestamp":"`...)
	b = strconv.AppendInt(b, timestampMs, 10)
	b = append(b, `","payload":"`...)
	n := base64.StdEncoding.EncodedLen(len(mulaw))
	b = slices.Grow(b, n)
	b = b[:len(b)+n]
	base64.StdEncoding.Encode(b[len(b)-n:], mulaw)
	b = append(b, `"},"streamSid":"`...)
	b = append(b, streamSid...)
	return append(b, `"}`...)
}
