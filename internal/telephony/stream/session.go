package stream

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/zaf/g711"
)

const (
	sampleRate   = 8000
	frameSamples = sampleRate / 50 // 20 ms
	frameTime    = 20 * time.Millisecond
	// outQueue bounds the messages waiting for the socket: 5 s of media.
	// A bot that stops reading loses the callee's audio beyond it (counted
	// in Stats) rather than stalling the call's media.
	outQueue = 256
	// stopTimeout bounds sending stop and the closing handshake.
	stopTimeout = time.Second
)

// Session is one call's open stream. The call's media drives it: Inbound
// with the callee's audio, DTMF with their keys, and NextFrame every 20 ms
// for the bot's audio to play. A reader goroutine takes the bot's
// messages and a writer goroutine sends ours; nothing else runs per call,
// and nothing runs per frame.
//
// Back-pressure: the bot's audio waits in a ring of at most MaxQueued
// (30 s, 240 kB; it starts at 1 s and doubles when full). A bot sending faster than real time fills it;
// the reader then stops reading the socket until audio has played, so the
// bot's own sends block (TCP flow control) and memory never grows. A clear
// sent meanwhile is read once the ring has room. Messages to the bot wait
// in a queue of outQueue; if the bot stops reading, the callee's audio
// beyond it is dropped (never the call's timing).
type Session struct {
	conn   *websocket.Conn
	cfg    Config
	ids    IDs
	start  time.Time
	ctx    context.Context
	cancel context.CancelFunc
	out    chan outMsg
	wg     sync.WaitGroup

	// Owned by the goroutine calling Inbound.
	acc   [frameSamples]byte
	accN  int
	chunk int64

	play *player

	endOnce sync.Once
	done    chan struct{}
	err     error // set before done is closed
	closed  atomic.Bool

	dropped   atomic.Int64
	malformed atomic.Int64
}

// outMsg is one message for the writer; media carries its frame by value
// so that queueing allocates nothing.
type outMsg struct {
	event string
	mulaw [frameSamples]byte
	chunk int64
	ts    int64
	name  string // mark name, dtmf digit
}

// Stats counts what a session dropped or waited for.
type Stats struct {
	// DroppedToBot counts frames of the callee's audio dropped because
	// the bot was not reading.
	DroppedToBot int64
	// Malformed counts messages from the bot that were not JSON.
	Malformed int64
	// Waits counts the times the bot's audio filled the ring and the
	// reader waited for it to play.
	Waits int64
	// Underruns counts the times the bot's audio ran out in the middle of
	// its speech and came back late (within 200 ms): the callee heard a
	// gap.
	Underruns int64
	// Jitter is the jitter buffer's estimate of how irregularly the bot's
	// audio arrives (RFC 3550's mean deviation, of each arrival's lateness).
	Jitter time.Duration
	// PlayoutDelay is how long the bot's next utterance will wait before
	// it plays: the jitter buffer's depth, adapted to the jitter.
	PlayoutDelay time.Duration
	// Queued is the bot's audio waiting to play.
	Queued time.Duration
}

func newSession(conn *websocket.Conn, cfg Config) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		conn: conn, cfg: cfg, ids: NewIDs(cfg.Namespace, cfg.CallID), start: time.Now(),
		ctx: ctx, cancel: cancel, out: make(chan outMsg, outQueue),
		play: newPlayer(cfg.MaxQueued, cfg.Prebuffer), done: make(chan struct{}),
	}
	s.out <- outMsg{event: EventConnected}
	s.out <- outMsg{event: EventStart}
	s.wg.Add(2)
	go s.write()
	go s.read()
	return s
}

// IDs are the stream's identifiers.
func (s *Session) IDs() IDs { return s.ids }

// Done is closed when the stream ended: the bot closed it, it failed, or
// Close was called.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err says why the stream ended once Done is closed: ErrBotHangup, a
// *Failure, or nil when Close ended it.
func (s *Session) Err() error {
	<-s.done
	return s.err
}

// Stats reports the session's counters.
func (s *Session) Stats() Stats {
	st := Stats{DroppedToBot: s.dropped.Load(), Malformed: s.malformed.Load(), Queued: s.play.queuedTime()}
	s.play.mu.Lock()
	st.Waits, st.Underruns = s.play.waits, s.play.underruns
	st.Jitter, st.PlayoutDelay = durationOf(s.play.jitter16/16), durationOf(s.play.target)
	s.play.mu.Unlock()
	return st
}

// end records why the stream ended, once.
func (s *Session) end(err error) {
	s.endOnce.Do(func() {
		s.err = err
		close(s.done)
		s.cancel()
		s.play.stop()
	})
}

// Close sends stop (when the stream is still up), closes the socket and
// waits for the session's goroutines. The callee hung up, or the call
// ended otherwise.
func (s *Session) Close() {
	if s.closed.Swap(true) {
		s.wg.Wait()
		return
	}
	select {
	case <-s.done:
	default:
		t := time.NewTimer(stopTimeout)
		select {
		case s.out <- outMsg{event: EventStop}: // the writer closes after it
			select {
			case <-s.done:
			case <-t.C:
			}
		case <-s.done:
		case <-t.C:
		}
		t.Stop()
	}
	s.end(nil)
	s.wg.Wait()
	_ = s.conn.CloseNow()
}

// Inbound takes the callee's audio (8 kHz PCM, any length) and sends it in
// 20 ms media messages. at is when pcm started.
func (s *Session) Inbound(pcm []int16, at time.Time) {
	for i, v := range pcm {
		s.acc[s.accN] = g711.EncodeUlawFrame(v)
		s.accN++
		if s.accN < frameSamples {
			continue
		}
		s.accN = 0
		s.chunk++
		frameStart := at.Add(time.Duration(i+1-frameSamples) * time.Second / sampleRate)
		m := outMsg{event: EventMedia, chunk: s.chunk, ts: max(0, frameStart.Sub(s.start).Milliseconds())}
		m.mulaw = s.acc
		s.send(m)
	}
}

// DTMF sends a key the callee pressed.
func (s *Session) DTMF(key byte) {
	s.send(outMsg{event: EventDTMF, name: string(key)})
}

// send queues m for the writer, or drops it when the bot is not reading.
func (s *Session) send(m outMsg) {
	select {
	case s.out <- m:
	default:
		s.dropped.Add(1)
	}
}

// write sends the queued messages in order; stop is the last.
func (s *Session) write() {
	defer s.wg.Done()
	buf := make([]byte, 0, 512)
	var seq int64
	for {
		var m outMsg
		select {
		case m = <-s.out:
		case <-s.ctx.Done():
			return
		}
		if m.event != EventConnected {
			seq++
		}
		var err error
		buf, err = s.encode(buf[:0], seq, &m)
		if err == nil {
			err = s.conn.Write(s.ctx, websocket.MessageText, buf)
		}
		if err != nil {
			s.writeFailed(err)
			return
		}
		if m.event == EventStop {
			ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
			s.closeNormally(ctx)
			cancel()
			s.end(nil)
			return
		}
	}
}

// writeFailed ends the session after a failed write. A bot closing the
// stream makes the write fail too, so the reader, which sees its close
// frame, gets a moment to say so (ErrBotHangup) first.
func (s *Session) writeFailed(err error) {
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		s.end(&Failure{Reason: ReasonDisconnected, Detail: "sending to the bot: " + err.Error()})
		_ = s.conn.CloseNow()
	}
}

// closeNormally starts the closing handshake; the reader sees its end.
func (s *Session) closeNormally(ctx context.Context) {
	done := make(chan struct{})
	go func() { // Close waits for the bot's close frame, read by the reader
		_ = s.conn.Close(websocket.StatusNormalClosure, "call ended")
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (s *Session) encode(b []byte, seq int64, m *outMsg) ([]byte, error) {
	sq := strconv.FormatInt(seq, 10)
	var v any
	switch m.event {
	case EventMedia:
		return appendMedia(b, seq, m.chunk, m.ts, s.ids.StreamSid, m.mulaw[:]), nil
	case EventConnected:
		v = Connected{Event: EventConnected, Protocol: "Call", Version: "1.0.0"}
	case EventStart:
		v = s.startMessage()
	case EventDTMF:
		v = DTMF{Event: EventDTMF, StreamSid: s.ids.StreamSid, SequenceNumber: sq, DTMF: DTMFInfo{Track: dtmfTrack, Digit: m.name}}
	case EventMark:
		v = Mark{Event: EventMark, SequenceNumber: sq, StreamSid: s.ids.StreamSid, Mark: MarkInfo{Name: m.name}}
	case EventStop:
		v = Stop{Event: EventStop, SequenceNumber: sq, StreamSid: s.ids.StreamSid,
			Stop: StopInfo{AccountSid: s.ids.AccountSid, CallSid: s.ids.CallSid}}
	default:
		return nil, fmt.Errorf("unknown event %q", m.event)
	}
	w := bytes.NewBuffer(b)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(w.Bytes(), []byte("\n")), nil
}

func (s *Session) startMessage() Start {
	params := make(map[string]string, len(s.cfg.Parameters)+3)
	for k, v := range s.cfg.Parameters {
		params[k] = v
	}
	params["call_id"], params["from_number"], params["to_number"] = s.cfg.CallID, s.cfg.From, s.cfg.To
	return Start{Event: EventStart, SequenceNumber: "1", StreamSid: s.ids.StreamSid, Start: StartInfo{
		AccountSid: s.ids.AccountSid, StreamSid: s.ids.StreamSid, CallSid: s.ids.CallSid,
		Tracks: []string{trackInbound}, CustomParameters: params,
		MediaFormat: MediaFormat{Encoding: "audio/x-mulaw", SampleRate: sampleRate, Channels: 1},
	}}
}

// read takes the bot's messages until the socket closes.
func (s *Session) read() {
	defer s.wg.Done()
	var buf bytes.Buffer
	scratch := make([]byte, 0, 4096)
	var msg Inbound
	for {
		typ, r, err := s.conn.Reader(s.ctx)
		if err != nil {
			s.end(s.readError(err))
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			s.end(s.readError(err))
			return
		}
		if typ != websocket.MessageText {
			continue // Twilio's protocol is text; binary frames are ignored
		}
		msg = Inbound{}
		if err := json.Unmarshal(buf.Bytes(), &msg); err != nil {
			s.malformed.Add(1)
			continue
		}
		if scratch, err = s.handle(&msg, scratch); err != nil {
			s.malformed.Add(1)
		}
		if s.ctx.Err() != nil {
			return
		}
	}
}

// readError maps the reader's end to the session's.
func (s *Session) readError(err error) error {
	if s.ctx.Err() != nil || s.closed.Load() {
		return nil // we closed it (the bot's close frame answers our stop)
	}
	switch code := websocket.CloseStatus(err); {
	case code == websocket.StatusNormalClosure || code == websocket.StatusGoingAway:
		return ErrBotHangup
	case errors.Is(err, websocket.ErrMessageTooBig):
		return &Failure{Reason: ReasonDisconnected,
			Detail: fmt.Sprintf("the bot sent a message over the %d-byte limit; the stream was closed (1009)", s.cfg.ReadLimit)}
	case code != -1:
		return &Failure{Reason: ReasonDisconnected, Detail: fmt.Sprintf("the bot closed the stream with status %d", code)}
	default:
		return &Failure{Reason: ReasonDisconnected, Detail: "the connection to the bot dropped: " + err.Error()}
	}
}

// handle applies one message from the bot.
func (s *Session) handle(m *Inbound, scratch []byte) ([]byte, error) {
	switch m.Event {
	case EventMedia:
		n := base64.StdEncoding.DecodedLen(len(m.Media.Payload))
		if cap(scratch) < n {
			scratch = make([]byte, n)
		}
		n, err := base64.StdEncoding.Decode(scratch[:n], []byte(m.Media.Payload))
		if err != nil {
			return scratch, err
		}
		s.play.enqueue(scratch[:n], time.Now())
	case EventMark:
		s.play.mark(m.Mark.Name)
	case EventClear:
		s.echo(s.play.clear())
	}
	return scratch, nil
}

// NextFrame fills pcm (20 ms, 160 samples) with the bot's next audio, or
// silence while there is none or an utterance waits its playout delay
// (see player), and echoes the marks whose audio has now played. The
// call's writer calls it every 20 ms.
func (s *Session) NextFrame(pcm []int16) {
	s.echo(s.play.next(pcm, time.Now()))
}

func (s *Session) echo(names []string) {
	for _, name := range names {
		s.send(outMsg{event: EventMark, name: name})
		if s.cfg.OnMark != nil {
			s.cfg.OnMark(name)
		}
	}
}
