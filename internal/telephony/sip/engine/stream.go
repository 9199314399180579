package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/stream"
)

// Who hung up a streamed call whose stream failed; the bot closing its
// stream normally is HangupByAgent.
const (
	HangupByStreamConnectFailed = stream.ReasonConnectFailed
	HangupByStreamDisconnected  = stream.ReasonDisconnected
)

// bridge runs an answered call with the organization's bot: it opens the
// stream, hands it the callee's audio and keys (listen) and plays its
// audio (play), until the bot closes it, it fails, or the call ends
// otherwise. It returns who hangs up, or "" when callCtx ended first; a
// failure's detail goes in the transcript, for the call's page.
func (e *Engine) bridge(callCtx context.Context, cfg stream.Config, m *callMedia, res *Result) string {
	var marksMu sync.Mutex
	var marks []Event
	cfg.OnMark = func(name string) {
		marksMu.Lock()
		marks = append(marks, markEvent(name))
		marksMu.Unlock()
	}
	defer func() {
		marksMu.Lock()
		res.Events = append(res.Events, marks...)
		marksMu.Unlock()
	}()
	s, err := stream.Dial(callCtx, cfg)
	if err != nil {
		if callCtx.Err() != nil {
			return ""
		}
		res.Failure = err.Error()
		res.note(SpeakerAgent, "(the bot's stream failed: "+err.Error()+")")
		return HangupByStreamConnectFailed
	}
	ids := s.IDs()
	res.note(SpeakerAgent, "(streaming to the bot: stream "+ids.StreamSid+", call "+ids.CallSid+", account "+ids.AccountSid+")")
	m.bot.Store(s)
	defer func() {
		m.bot.Store(nil)
		s.Close() // sends stop unless the bot ended the stream
		res.StreamStats = s.Stats()
	}()
	for {
		select {
		case <-callCtx.Done():
			return ""
		case k := <-m.keys:
			s.DTMF(k.key)
		case <-s.Done():
			return streamEnd(s.Err(), res)
		}
	}
}

// streamEnd is who hangs up when the stream ended first.
func streamEnd(err error, res *Result) string {
	var f *stream.Failure
	switch {
	case errors.Is(err, stream.ErrBotHangup):
		return HangupByAgent
	case errors.As(err, &f):
		res.Failure = f.Error()
		res.note(SpeakerAgent, "(the bot's stream failed: "+f.Error()+")")
		return f.Reason
	default:
		return HangupByAgent
	}
}

func markEvent(name string) Event {
	return Event{At: time.Now(), Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "(mark " + name + ")", Mark: name, Note: true}}
}
