package sim

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/telephony/stream"
)

// StreamConfigFunc builds the stream of a call whose agent streams to a
// bot (the SIP renderer's, so both carriers read the agent alike).
type StreamConfigFunc func(ctx context.Context, req telephony.Request) (*stream.Config, error)

// Streamed calls: the simulator's one piece of live state.
//
// When an answered call's agent has spec.stream (and a StreamConfigFunc
// is set), Progress opens the stream at the answer and a goroutine plays
// the simulated callee: it speaks tone bursts into the stream every 20 ms
// (utterance, pause, as in the recording) and listens to the bot. The
// call then ends at the first of: the callee hangs up at the end of Talk
// (user_hangup; the bot gets stop), the bot closes the stream
// (agent_hangup), the stream fails (stream_connect_failed,
// stream_disconnected), the API stops it (api_hangup).
//
// The call's recording is the real streams, as on a SIP trunk: the bot's
// audio as played on the left, the simulated callee on the right, written
// to a temporary file as the call goes and removed at Release. Its
// transcript says only what happened: the stream's identifiers, each of
// the callee's simulated utterances, the bot's marks and a failure; no
// word of the bot's, which the simulator cannot hear.
//
// A restart loses the live sessions (the bot's socket with them). A
// streamed call answered before this process started is therefore
// reported ended when the process started, with operator_restart, as SIP
// calls are: the stream is never reopened on a call the bot already had,
// and neither recording nor transcript is left of it.
type streams struct {
	cfg     StreamConfigFunc
	started time.Time
	// maxBytes bounds each recording (Carrier.LimitRecordings).
	maxBytes int64

	mu    sync.Mutex
	calls map[string]*simStream
}

// simStream is one streamed call's simulated callee.
type simStream struct {
	liveEnd
	// Set before done is closed.
	recPath string // the recording ("": none)
	// maxBytes bounds the recording (0: none).
	maxBytes int64

	mu    sync.Mutex // marks are echoed on the session's reader too
	turns []telephony.Turn
}

// EnableStreams makes the carrier open the streams of agents with
// spec.stream; without it those calls play the simulated conversation.
func (c *Carrier) EnableStreams(cfg StreamConfigFunc) {
	c.streams = &streams{cfg: cfg, started: time.Now(), calls: map[string]*simStream{}}
}

// streamNextCheck is how often a live streamed call is looked at: the
// bot may end it at any moment, and the simulator has no way to wake it.
const streamNextCheck = time.Second

// streamProgress reports a streamed call; ok is false for calls that are
// not streamed (or not answered by a person), which the timeline decides.
func (c *Carrier) streamProgress(req telephony.Request, placedAt, now time.Time) (p telephony.Progress, ok bool) {
	if !c.streamed(req) {
		return p, false
	}
	answeredAt := placedAt.Add(c.t.Ring)
	if now.Before(answeredAt) {
		return p, false // ringing
	}
	hangupAt := answeredAt.Add(c.t.Talk)
	if answeredAt.Before(c.streams.started) {
		return connectedEnd(answeredAt, minTime(hangupAt, c.streams.started), "operator_restart"), true
	}
	return c.streams.open(req, answeredAt, hangupAt).progress(req, answeredAt, hangupAt, now), true
}

// liveEnd is how a live simulated call (streamed, or holding a
// conversation) ends: its fields are set before done is closed.
type liveEnd struct {
	cancel  context.CancelFunc
	done    chan struct{}
	endedAt time.Time
	reason  string
	detail  string
	// transfer is a conversation's last transfer (set before done is
	// closed).
	transfer *telephony.TransferOutcome
}

// stop ends the call's session and waits for it.
func (l *liveEnd) stop() {
	l.cancel()
	<-l.done
}

// progress reports the live call answered at answeredAt, which ends by
// endBy at the latest, as of now: stopped by the API, ended by its
// session, or still connected.
func (l *liveEnd) progress(req telephony.Request, answeredAt, endBy, now time.Time) telephony.Progress {
	if req.StopAt != nil && !req.StopAt.After(now) {
		l.stop()
		if !l.endedAt.Before(*req.StopAt) {
			return connectedEnd(answeredAt, *req.StopAt, telephony.APIHangup)
		}
	}
	select {
	case <-l.done:
		p := connectedEnd(answeredAt, l.endedAt, l.reason)
		p.Detail, p.Transfer = l.detail, l.transfer
		return p
	default:
	}
	return telephony.Progress{Phase: telephony.Connected, AnsweredAt: &answeredAt,
		NextCheck: max(min(endBy.Sub(now), streamNextCheck), time.Millisecond)}
}

func connectedEnd(answeredAt, endedAt time.Time, reason string) telephony.Progress {
	endedAt = maxTime(endedAt, answeredAt)
	return telephony.Progress{Phase: telephony.Ended, AnsweredAt: &answeredAt, EndedAt: &endedAt,
		Disposition: telephony.Answered, DisconnectionReason: reason, Duration: endedAt.Sub(answeredAt)}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// open returns the call's session, starting it the first time.
func (ss *streams) open(req telephony.Request, answeredAt, hangupAt time.Time) *simStream {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s := ss.calls[req.CallID]; s != nil {
		return s
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &simStream{liveEnd: liveEnd{cancel: cancel, done: make(chan struct{})}, maxBytes: ss.maxBytes}
	ss.calls[req.CallID] = s
	go s.run(ctx, ss.cfg, req, answeredAt, hangupAt)
	return s
}

// streamed reports whether the call is streamed: its agent streams to a
// bot, the carrier opens streams, and a person answers it.
func (c *Carrier) streamed(req telephony.Request) bool {
	return c.streams != nil && req.Agent != nil && req.Agent.Spec.Stream != nil && disposition(req.To) == telephony.Answered
}

// recording opens the ended call's recording.
func (ss *streams) recording(callID string) (io.ReadCloser, error) {
	s := ss.ended(callID)
	if s == nil || s.recPath == "" {
		return nil, telephony.ErrNoRecording
	}
	f, err := os.Open(s.recPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, telephony.ErrNoRecording
	}
	return f, err
}

// ended returns the session of an ended streamed call, or nil when this
// process has none (it never ran here, or it was released).
func (ss *streams) ended(callID string) *simStream {
	ss.mu.Lock()
	s := ss.calls[callID]
	ss.mu.Unlock()
	if s == nil {
		return nil
	}
	<-s.done // Progress reported the end: this does not wait
	return s
}

// stop ends the call (the API's stop) and waits for the session's end.
// release drops the call's session, ending it if it still runs, and its
// recording.
func (ss *streams) release(callID string) {
	ss.mu.Lock()
	s := ss.calls[callID]
	delete(ss.calls, callID)
	ss.mu.Unlock()
	if s != nil {
		s.stop()
		if s.recPath != "" {
			_ = os.Remove(s.recPath)
		}
	}
}

// run is the simulated callee: it speaks into the stream and listens to
// the bot until one of them hangs up, recording both from answeredAt.
func (s *simStream) run(ctx context.Context, cfgFn StreamConfigFunc, req telephony.Request, answeredAt, hangupAt time.Time) {
	defer close(s.done)
	s.reason = stream.ReasonConnectFailed
	defer func() { s.endedAt = time.Now() }()
	cfg, err := cfgFn(ctx, req)
	if err != nil {
		s.failed(answeredAt, err)
		return
	}
	cfg.OnMark = func(name string) {
		s.note(answeredAt, telephony.Turn{Speaker: agent, Text: "(mark " + name + ")", Mark: name})
	}
	sess, err := stream.Dial(ctx, *cfg)
	if err != nil {
		// No recording: the simulated callee speaks only into the stream,
		// so there was nothing to hear (recording_url null, not a silent
		// WAV).
		s.failed(answeredAt, err)
		return
	}
	rec := s.record(answeredAt)
	defer func() {
		if err := rec.Close(); err != nil && s.recPath != "" {
			_ = os.Remove(s.recPath)
			s.recPath = ""
		}
	}()
	ids := sess.IDs()
	s.note(answeredAt, telephony.Turn{Speaker: agent,
		Text: "(streaming to the bot: stream " + ids.StreamSid + ", call " + ids.CallSid + ", account " + ids.AccountSid + ")"})
	defer sess.Close() // stop, unless the bot ended it
	s.converse(ctx, sess, rec, answeredAt, hangupAt)
}

// converse runs the call's media every 20 ms until someone hangs up.
func (s *simStream) converse(ctx context.Context, sess *stream.Session, rec *audio.Recorder, answeredAt, hangupAt time.Time) {
	hangup := time.NewTimer(time.Until(hangupAt))
	defer hangup.Stop()
	tick := time.NewTicker(frameTime)
	defer tick.Stop()
	callee, bot := make([]int16, frameSamples), make([]int16, frameSamples)
	var utterance time.Time // when the callee's utterance in progress began
	defer func() {
		if !utterance.IsZero() {
			s.spoke(answeredAt, utterance, time.Now())
		}
	}()
	for i := 0; ; i += frameSamples {
		select {
		case now := <-tick.C:
			at := now.Add(-frameTime)
			switch speaking := calleeSpeaks(callee, i); {
			case speaking && utterance.IsZero():
				utterance = at
			case !speaking && !utterance.IsZero():
				s.spoke(answeredAt, utterance, at)
				utterance = time.Time{}
			}
			sess.Inbound(callee, at)
			rec.Add(audio.CalleeChannel, callee, at)
			sess.NextFrame(bot)
			rec.Add(audio.AgentChannel, bot, now)
		case <-hangup.C:
			s.reason = "user_hangup"
			return
		case <-ctx.Done():
			s.reason = telephony.APIHangup
			return
		case <-sess.Done():
			s.reason = streamReason(sess.Err())
			if s.reason != "agent_hangup" {
				s.failed(answeredAt, sess.Err())
			}
			return
		}
	}
}

// record starts the call's recording; it records nothing when no
// temporary file can be made (the call goes on without one).
func (s *simStream) record(answeredAt time.Time) *audio.Recorder {
	if f, err := os.CreateTemp("", "switchboard-sim-*.wav"); err == nil {
		s.recPath = f.Name()
		_ = f.Close()
	}
	rec, err := audio.NewRecorder(s.recPath)
	if err != nil {
		s.recPath = ""
		rec, _ = audio.NewRecorder("")
	}
	rec.Limit(s.maxBytes)
	rec.Begin(answeredAt)
	return rec
}

// note adds a turn to the transcript at the present moment: the
// simulator's account of what happened (Turn.Note).
func (s *simStream) note(answeredAt time.Time, t telephony.Turn) {
	t.Note = true
	t.Start = time.Since(answeredAt).Truncate(time.Millisecond)
	t.End = t.Start
	s.mu.Lock()
	s.turns = append(s.turns, t)
	s.mu.Unlock()
}

// spoke adds the callee's utterance from start to end to the transcript.
func (s *simStream) spoke(answeredAt, start, end time.Time) {
	s.mu.Lock()
	s.turns = append(s.turns, telephony.Turn{Speaker: callee, Text: calleeUtterance, Note: true,
		Start: start.Sub(answeredAt).Truncate(time.Millisecond), End: end.Sub(answeredAt).Truncate(time.Millisecond)})
	s.mu.Unlock()
}

// failed records why the stream failed, in the progress and the transcript.
func (s *simStream) failed(answeredAt time.Time, err error) {
	s.detail = err.Error()
	s.note(answeredAt, telephony.Turn{Speaker: agent, Text: "(the bot's stream failed: " + s.detail + ")"})
}

// transcript is what the call's transcript can honestly say.
func (s *simStream) transcript() []telephony.Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.turns)
}

const (
	frameTime    = 20 * time.Millisecond
	frameSamples = SampleRate / 50
)

func streamReason(err error) string {
	if f, ok := err.(*stream.Failure); ok {
		return f.Reason
	}
	return "agent_hangup"
}

// The simulated callee speaks into the stream as its recordings render
// speech: a tone of its pitch, 1.2 s at a time with 0.3 s pauses.
const (
	calleeTalk = 1200 * time.Millisecond
	calleeTurn = 1500 * time.Millisecond
	// calleeUtterance is the transcript's line for each of them.
	calleeUtterance = "(simulated speech: a 660 Hz tone)"
)

// calleeSpeaks fills frame, which starts at sample offset i of the call,
// and reports whether it starts within an utterance.
func calleeSpeaks(frame []int16, i int) bool {
	for k := range frame {
		if (i+k)%samples(calleeTurn) >= samples(calleeTalk) {
			frame[k] = 0
			continue
		}
		frame[k] = int16(amplitude * math.Sin(2*math.Pi*calleeHz*float64(i+k)/SampleRate))
	}
	return i%samples(calleeTurn) < samples(calleeTalk)
}
