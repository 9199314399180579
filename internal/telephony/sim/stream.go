package sim

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
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
// A restart loses the live sessions (the bot's socket with them). A
// streamed call answered before this process started is therefore
// reported ended when the process started, with operator_restart, as SIP
// calls are: the stream is never reopened on a call the bot already had.
type streams struct {
	cfg     StreamConfigFunc
	started time.Time

	mu    sync.Mutex
	calls map[string]*simStream
}

// simStream is one streamed call's simulated callee.
type simStream struct {
	cancel context.CancelFunc
	done   chan struct{}
	// Set before done is closed.
	endedAt time.Time
	reason  string
	detail  string
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
	if c.streams == nil || req.Agent == nil || req.Agent.Spec.Stream == nil || disposition(req.To) != telephony.Answered {
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
	s := c.streams.open(req, hangupAt)
	if req.StopAt != nil && !req.StopAt.After(now) {
		s.stop()
		if s.endedAt.Before(*req.StopAt) {
			return connectedEnd(answeredAt, s.endedAt, s.reason), true
		}
		return connectedEnd(answeredAt, *req.StopAt, telephony.APIHangup), true
	}
	select {
	case <-s.done:
		p := connectedEnd(answeredAt, s.endedAt, s.reason)
		p.Detail = s.detail
		return p, true
	default:
	}
	return telephony.Progress{Phase: telephony.Connected, AnsweredAt: &answeredAt,
		NextCheck: max(min(hangupAt.Sub(now), streamNextCheck), time.Millisecond)}, true
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
func (ss *streams) open(req telephony.Request, hangupAt time.Time) *simStream {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s := ss.calls[req.CallID]; s != nil {
		return s
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &simStream{cancel: cancel, done: make(chan struct{})}
	ss.calls[req.CallID] = s
	go s.run(ctx, ss.cfg, req, hangupAt)
	return s
}

// stop ends the call (the API's stop) and waits for the session's end.
func (s *simStream) stop() {
	s.cancel()
	<-s.done
}

// release drops the call's session, ending it if it still runs.
func (ss *streams) release(callID string) {
	ss.mu.Lock()
	s := ss.calls[callID]
	delete(ss.calls, callID)
	ss.mu.Unlock()
	if s != nil {
		s.stop()
	}
}

// run is the simulated callee: it speaks into the stream and listens to
// the bot until one of them hangs up.
func (s *simStream) run(ctx context.Context, cfgFn StreamConfigFunc, req telephony.Request, hangupAt time.Time) {
	defer close(s.done)
	s.reason = stream.ReasonConnectFailed
	defer func() { s.endedAt = time.Now() }()
	cfg, err := cfgFn(ctx, req)
	if err != nil {
		s.detail = err.Error()
		return
	}
	sess, err := stream.Dial(ctx, *cfg)
	if err != nil {
		s.detail = err.Error()
		return
	}
	defer sess.Close() // stop, unless the bot ended it
	hangup := time.NewTimer(time.Until(hangupAt))
	defer hangup.Stop()
	tick := time.NewTicker(frameTime)
	defer tick.Stop()
	frame := make([]int16, frameSamples)
	for i := 0; ; i += frameSamples {
		select {
		case <-tick.C:
			calleeSpeaks(frame, i)
			sess.Inbound(frame, time.Now().Add(-frameTime))
			sess.NextFrame(frame) // the bot's audio plays to nobody
		case <-hangup.C:
			s.reason = "user_hangup"
			return
		case <-ctx.Done():
			s.reason = telephony.APIHangup
			return
		case <-sess.Done():
			s.reason = streamReason(sess.Err())
			if s.reason != "agent_hangup" {
				s.detail = sess.Err().Error()
			}
			return
		}
	}
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
)

// calleeSpeaks fills frame, which starts at sample offset i of the call.
func calleeSpeaks(frame []int16, i int) {
	for k := range frame {
		if (i+k)%samples(calleeTurn) >= samples(calleeTalk) {
			frame[k] = 0
			continue
		}
		frame[k] = int16(amplitude * math.Sin(2*math.Pi*calleeHz*float64(i+k)/SampleRate))
	}
}
