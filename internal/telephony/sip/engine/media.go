package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/media"
	"github.com/zaf/g711"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"

	"github.com/switchboard-dev/switchboard/internal/telephony/amd"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	voice "github.com/switchboard-dev/switchboard/internal/telephony/media"
	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
	"github.com/switchboard-dev/switchboard/internal/telephony/stream"
)

const (
	sampleRate   = audio.SampleRate
	frameSamples = sampleRate / 50 // 20 ms
)

// converse runs an answered call until someone hangs up: it records both
// directions into rec (which it closes), runs AMD and the script (see
// run) and hangs up.
func (e *Engine) converse(ctx context.Context, d *diago.DialogClientSession, trunk Trunk, c CallSpec, rec *audio.Recorder, res *Result,
	watch *mediaWatch) error {
	var wprops diago.MediaProps
	opts := []diago.AudioWriterOption{diago.WithAudioWriterMediaProps(&wprops)}
	var dtmf *diago.DTMFWriter
	if mayPress(trunk, c) {
		// The agent may key digits (press_digit, pressDigits steps): RFC
		// 4733 events go out between the audio frames.
		dtmf = &diago.DTMFWriter{}
		opts = append(opts, diago.WithAudioWriterDTMF(dtmf))
	}
	w, err := d.AudioWriter(opts...)
	if err != nil {
		return errors.Join(fmt.Errorf("audio writer: %w", err), e.hangup(d, res, HangupByAgent), rec.Close())
	}
	r, err := d.AudioReader()
	if err != nil {
		return errors.Join(fmt.Errorf("audio reader: %w", err), e.hangup(d, res, HangupByAgent), rec.Close())
	}
	enc, err := encoder(wprops.Codec)
	if err != nil {
		return errors.Join(err, e.hangup(d, res, HangupByAgent), rec.Close())
	}

	m := newCallMedia(rec, telephoneEventPT(d.MediaSession().CommonCodecs()), res.AnsweredAt, c.AMD)
	m.keypad = newKeypad(trunk, d, dtmf)
	vad := e.cfg.VAD
	if c.Conversation != nil && vad.Hangover == 0 {
		// A conversation's turn ends at its endpointing delay, counted from
		// the end of the voice; a shorter pause ending the utterance lets
		// the recognizer start within that delay (the loop joins the
		// utterances of one turn).
		vad.Hangover = conversationHangover
	}
	m.listenWith(vad, c.Recognizer, cmp.Or(e.cfg.RecognizeTimeout, defaultRecognizeTimeout))
	m.zone = cmp.Or(c.Zone, time.UTC)
	tctx, cancelTranscripts := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelTranscripts()
	t := startTranscriber(tctx, m)
	var wg sync.WaitGroup
	wg.Go(func() { m.play(guardedWriter{w: w, watch: watch}, enc) })
	wg.Go(func() { m.listen(r, d.RTPPacketReader) })

	callCtx, stop := e.callContext(ctx, d, c, res.AnsweredAt, watch.refused)
	lc := &liveCall{e: e, d: d, trunk: trunk, spec: c, m: m, res: res}
	hangupBy, ctxErr := endedBy(ctx, callCtx, e.run(callCtx, lc))
	stop()
	close(m.stop)
	var byeErr error
	if hangupBy == HangupByCallee {
		res.EndedAt, res.HangupBy = time.Now(), calleeHangup(res)
	} else if byeErr = e.hangup(d, res, hangupBy); byeErr != nil {
		byeErr = fmt.Errorf("bye: %w", byeErr)
	}
	// Closing the media unblocks the reader and the writer.
	closeErr := d.DialogMedia.Close()
	if closeErr != nil {
		closeErr = fmt.Errorf("close media: %w", closeErr)
	}
	wg.Wait()
	recErr := m.rec.Close()
	// The last utterances' text, at most one recognition's time after the
	// call ended.
	t.finish(res, m.recognizeTimeout, cancelTranscripts)
	res.placeEvents()
	return errors.Join(ctxErr, byeErr, recErr, closeErr)
}

// calleeHangup is who ended a call the callee hung up: the transfer, when
// the callee had been bridged to a person (the call's end is the
// transfer's), else the callee.
func calleeHangup(res *Result) string {
	if res.Transfer != nil && res.Transfer.Result == switchboardv1.TransferBridged {
		return HangupByTransfer
	}
	return HangupByCallee
}

// endedBy says who ends the call, given who the script says (hangupBy, ""
// when callCtx ended it), and returns ctx's error when ctx ended it. A BYE
// from the callee that came first wins: there is no call left to hang up.
func endedBy(ctx, callCtx context.Context, hangupBy string) (string, error) {
	switch cause := context.Cause(callCtx); {
	case errors.Is(cause, errCalleeHangup):
		return HangupByCallee, nil
	case hangupBy != "":
		return hangupBy, nil
	case errors.Is(cause, errMaxDuration):
		return HangupByMaxDuration, nil
	case errors.Is(cause, errStopped):
		return HangupByAPI, nil
	case errors.Is(cause, errAddressRefused):
		return HangupByAddressRefused, nil
	default:
		return HangupByAgent, ctx.Err()
	}
}

// Causes of the end of a call context other than ctx's.
var (
	errCalleeHangup = errors.New("callee hung up")
	errMaxDuration  = errors.New("max duration")
	// errAddressRefused: a re-INVITE moved the media to a refused address.
	errAddressRefused = errors.New("media address refused")
)

// callContext is done when the callee hangs up, at c.MaxDuration after the
// answer, when c.Stop or refused is closed, or when ctx ends, with
// errCalleeHangup, errMaxDuration, errStopped, errAddressRefused or ctx's
// error as its cause. Call stop once done with it.
func (e *Engine) callContext(ctx context.Context, d *diago.DialogClientSession, c CallSpec, answeredAt time.Time,
	refused <-chan struct{}) (context.Context, func()) {
	callCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	refusedCtx, releaseRefused := stopContext(refused)
	stopRefused := context.AfterFunc(refusedCtx, func() { cancel(errAddressRefused) })
	stopBye := context.AfterFunc(d.Context(), func() { cancel(errCalleeHangup) })
	stopCtx := context.AfterFunc(ctx, func() { cancel(ctx.Err()) })
	stopped, release := stopContext(c.Stop)
	stopAPI := context.AfterFunc(stopped, func() { cancel(errStopped) })
	stopMax := func() bool { return false }
	if c.MaxDuration > 0 {
		stopMax = time.AfterFunc(time.Until(answeredAt.Add(c.MaxDuration)), func() { cancel(errMaxDuration) }).Stop
	}
	return callCtx, func() {
		stopRefused()
		releaseRefused()
		stopBye()
		stopCtx()
		stopAPI()
		release()
		stopMax()
		cancel(nil)
	}
}

// telephoneEventPT is the payload type of telephone-event/8000 negotiated
// in SDP, else the one we offer (diago offers 101).
func telephoneEventPT(codecs []media.Codec) uint8 {
	for _, c := range codecs {
		if c.Name == media.CodecTelephoneEvent8000.Name && c.SampleRate == 8000 {
			return c.PayloadType
		}
	}
	return media.CodecTelephoneEvent8000.PayloadType
}

// callMedia is the audio of one answered call: a writer goroutine (play)
// sends what the script queues, silence otherwise; a reader goroutine
// (listen) records the callee, decodes their keys and feeds the detector.
type callMedia struct {
	rec  *audio.Recorder
	stop chan struct{}

	// plays hands playbacks to the writer; writerGone is closed when it
	// stopped (the media closed or broke).
	plays      chan *playback
	writerGone chan struct{}

	eventPT uint8
	// keys receives the callee's key presses; when full, keys are dropped.
	keys chan keyPress
	// detector is nil when AMD is off.
	detector *amdFeed
	// With AMD on, voiceThreshold is the detector's silence threshold and
	// lastVoiceAt is when the callee's last voiced frame arrived (UnixNano,
	// 0 before any), to tell when a machine's greeting ended.
	voiceThreshold int
	lastVoiceAt    atomic.Int64

	answeredAt time.Time
	// ear cuts the callee's audio into utterances, on listen's goroutine;
	// heard is how many samples it was given, the last of which ended at
	// heardEnd.
	ear      *voice.Segmenter
	heard    int64
	heardEnd time.Time
	// speaking is set while the callee speaks (from the start of speech to
	// the end of the utterance).
	speaking atomic.Bool
	// bargeable is the playback the callee's speech stops (nil: none).
	bargeable atomic.Pointer[playback]
	// listening is set while a gather listens to speech: speech events go
	// to speech then (dropped when it is full).
	listening atomic.Bool
	speech    chan speechEvent
	// recognizer is the call's (nil: gathers take keys only, and the
	// callee's speech is not transcribed).
	recognizer       speech.Recognizer
	recognizeTimeout time.Duration
	// zone is the callee's time zone, which their dates are read in.
	zone *time.Location
	// transcribe takes the utterances no gather listens to (nil: none).
	transcribe *transcriber
	// bot is the stream of a call bridged to the organization's bot: it
	// gets the callee's audio and fills the frames nothing else plays.
	bot atomic.Pointer[stream.Session]
	// peer is the person a transfer bridged the callee to (nil: none):
	// they get the callee's audio and fill the frames nothing else plays.
	peer atomic.Pointer[secondLeg]
	// keypad keys the agent's digits (nil: it cannot).
	keypad keypad
	// underruns counts the frames of silence streamed playbacks played
	// because their audio came late.
	underruns atomic.Int64
	// lastPlay is the playback the script started last (nil: none), for
	// the transcript's timeline; the script's goroutine only.
	lastPlay *playback
}

// speechEvent is the callee starting to speak, or an utterance they ended.
type speechEvent struct {
	started bool
	// cut: the utterance reached the length bound and the callee goes on.
	cut bool
	// pcm is the utterance, which started at start and ended at end.
	pcm        []int16
	start, end time.Time
}

type keyPress struct {
	key byte
	at  time.Time
}

// playback is audio queued for the writer: pcm, whole, or a stream whose
// audio arrives while it plays.
type playback struct {
	pcm []int16
	// stream, when set, is the audio instead of pcm (newStreamPlayback).
	stream *pcmStream
	// started, when set, is closed once the first frame was written.
	started chan struct{}
	// underruns counts the frames of silence a stream played because its
	// audio came late, set by the writer before done is closed.
	underruns int
	// pos is how much of pcm the writer played.
	pos int
	// cut stops it at the next frame (barge-in).
	cut atomic.Bool
	// done is closed once it played or was cut, or the writer stopped.
	done chan struct{}
	// first is when its first frame was recorded (zero: none was) and
	// frames how many were, set by the writer before done is closed.
	first  time.Time
	frames int
}

func newCallMedia(rec *audio.Recorder, eventPT uint8, answeredAt time.Time, p *amd.Params) *callMedia {
	m := &callMedia{
		rec:        rec,
		stop:       make(chan struct{}),
		plays:      make(chan *playback),
		writerGone: make(chan struct{}),
		eventPT:    eventPT,
		keys:       make(chan keyPress, 64),
		answeredAt: answeredAt,
		speech:     make(chan speechEvent, 16),
	}
	if p != nil {
		m.voiceThreshold = p.SilenceThreshold
		m.detector = newAMDFeed(*p, answeredAt)
	}
	return m
}

// listenWith sets up voice activity detection on the callee's audio, and
// the recognizer of their utterances.
func (m *callMedia) listenWith(cfg voice.VADConfig, r speech.Recognizer, timeout time.Duration) {
	m.ear = voice.NewSegmenter(cfg, m.onSpeech)
	m.recognizer, m.recognizeTimeout = r, timeout
}

// hear gives the callee's audio, which started at t, to the ear.
func (m *callMedia) hear(pcm []int16, t time.Time) {
	if m.ear == nil {
		return
	}
	m.heard += int64(len(pcm))
	m.heardEnd = t.Add(samplesDuration(len(pcm)))
	m.ear.Write(pcm)
}

// onSpeech handles the ear's events: the start of speech stops a playback
// that allows barge-in, and is, with the utterances, for a gather that
// listens; the utterances no gather listens to go to the transcriber.
func (m *callMedia) onSpeech(ev voice.Event) {
	listening := m.listening.Load()
	var se speechEvent
	switch ev {
	case voice.SpeechStarted:
		m.speaking.Store(true)
		if p := m.bargeable.Load(); p != nil {
			p.cut.Store(true)
		}
		se.started = true
	case voice.UtteranceEnded:
		u := m.ear.Utterance()
		m.speaking.Store(u.Cut) // still speaking when cut at the length bound
		if !listening && m.transcribe == nil {
			return
		}
		se.start, se.end, se.pcm, se.cut = m.heardAt(u.Start), m.heardAt(u.End), slices.Clone(u.PCM), u.Cut
		if !listening {
			m.transcribe.offer(se)
			return
		}
	}
	if !listening {
		return
	}
	select {
	case m.speech <- se:
	default:
	}
}

// flushEar ends the utterance in progress when the callee's audio ends.
func (m *callMedia) flushEar() {
	if m.ear != nil {
		m.ear.Flush()
	}
}

// heardAt is when the sample at position pos of the ear's stream started.
func (m *callMedia) heardAt(pos int64) time.Time {
	return m.heardEnd.Add(-samplesDuration(int(m.heard - pos)))
}

// dropSpeech forgets the speech events so far.
func (m *callMedia) dropSpeech() {
	for {
		select {
		case <-m.speech:
		default:
			return
		}
	}
}

// play sends the queued playbacks, and silence between them, paced by the
// RTP writer's clock, until stop or until the media closes.
func (m *callMedia) play(w io.Writer, enc func([]int16) []byte) {
	defer close(m.writerGone)
	var cur *playback
	defer func() {
		if cur != nil {
			m.finish(cur)
		}
	}()
	frame := make([]int16, frameSamples)
	for {
		select {
		case <-m.stop:
			return
		default:
		}
		if cur == nil {
			select {
			case cur = <-m.plays:
			default:
			}
		}
		var last bool
		cur, last = m.fill(cur, frame)
		now := time.Now()
		if cur != nil && cur.frames == 0 && cur.started != nil {
			close(cur.started) // its first frame is handed to the RTP writer
		}
		if _, err := w.Write(enc(frame)); err != nil {
			// The media closed (the call is over) or broke: either way
			// nothing more is played.
			return
		}
		m.rec.Add(audio.AgentChannel, frame, now)
		if cur != nil {
			if cur.frames == 0 {
				cur.first = now
			}
			cur.frames++
			if last || cur.cut.Load() {
				m.finish(cur)
				cur = nil
			}
		}
	}
}

// fill makes frame the next of cur, else the bot's, else silence. It
// returns the playback the frame belongs to (nil: none; a stream with
// nothing left is finished here) and whether it is that playback's last:
// its end, or the frame after a cut, which is silence.
func (m *callMedia) fill(cur *playback, frame []int16) (*playback, bool) {
	clear(frame)
	if cur != nil && !cur.cut.Load() {
		if cur.stream == nil {
			cur.pos += copy(frame, cur.pcm[cur.pos:])
			return cur, cur.pos >= len(cur.pcm)
		}
		n, underrun, drained := cur.stream.read(frame)
		if underrun {
			cur.underruns++
			m.underruns.Add(1)
		}
		if n > 0 || !drained {
			return cur, drained
		}
		m.finish(cur) // nothing was left of it: this frame is not its own
		cur = nil
	}
	if leg := m.peer.Load(); leg != nil {
		leg.toCallee(frame)
	} else if bot := m.bot.Load(); bot != nil {
		bot.NextFrame(frame)
	}
	return cur, cur != nil
}

// finish ends a playback on the writer's goroutine: a cut stream's
// producer is stopped (unblocked), and done is closed.
func (m *callMedia) finish(p *playback) {
	if p.stream != nil {
		p.stream.halt()
	}
	close(p.done)
}

// listen records the callee's audio, decodes their keys and, with AMD on,
// feeds the detector and notes when they last spoke, until the media
// closes.
func (m *callMedia) listen(r io.Reader, packets *media.RTPPacketReader) {
	defer m.flushEar()
	buf := make([]byte, media.RTPBufSize)
	pcm := make([]int16, 0, frameSamples)
	var dtmf dtmfDecoder
	var clock rtpClock
	for {
		n, err := r.Read(buf)
		if err != nil && badSRTPPacket(err) {
			continue // one forged, replayed or clear packet: the call goes on
		}
		if err != nil {
			return
		}
		if n == 0 {
			continue
		}
		h := packets.PacketHeader
		now := time.Now()
		if h.PayloadType == m.eventPT {
			if key, ok := dtmf.decode(h.SSRC, h.Timestamp, buf[:n]); ok {
				select {
				case m.keys <- keyPress{key: key, at: now}:
				default:
				}
			}
			continue
		}
		pcm = decode(pcm[:0], h.PayloadType, buf[:n])
		if len(pcm) == 0 {
			continue // comfort noise, unknown payload types...
		}
		started := clock.place(h.SSRC, h.Timestamp, now.Add(-samplesDuration(len(pcm))))
		m.rec.Add(audio.CalleeChannel, pcm, started)
		if m.detector != nil {
			if loud(pcm, m.voiceThreshold) {
				m.lastVoiceAt.Store(now.UnixNano())
			}
			m.detector.feed(pcm, started)
		}
		m.hear(pcm, started)
		if bot := m.bot.Load(); bot != nil {
			bot.Inbound(pcm, started)
		}
		if leg := m.peer.Load(); leg != nil {
			leg.toPerson.write(pcm)
		}
	}
}

// rtpClock places the callee's audio on the call's timeline by RTP
// timestamp rather than by arrival time, so that a packet delayed by the
// network or by a busy machine keeps its place and only audio that never
// came leaves silence in the recording. The stream is anchored at the
// arrival of its first packet, and anchored again when a packet comes
// earlier than its place (the anchor packet itself was late), when the
// source changes, or when the timestamps jump (a packet seemingly more
// than maxLate late).
type rtpClock struct {
	anchored bool
	ssrc     uint32
	ts       uint32
	at       time.Time
}

// maxLate is the most a packet may be late and still be placed by its
// timestamp.
const maxLate = 2 * time.Second

// place returns when the audio of a packet with this source and timestamp
// started, given when it would have started by its arrival.
func (c *rtpClock) place(ssrc, ts uint32, byArrival time.Time) time.Time {
	if c.anchored && ssrc == c.ssrc {
		byTimestamp := c.at.Add(samplesDuration(int(int32(ts - c.ts)))) //nolint:gosec // RTP timestamps wrap
		if late := byArrival.Sub(byTimestamp); late >= 0 && late <= maxLate {
			return byTimestamp
		}
	}
	c.anchored, c.ssrc, c.ts, c.at = true, ssrc, ts, byArrival
	return byArrival
}

// samplesDuration is how long n samples play.
func samplesDuration(n int) time.Duration { return time.Duration(n) * time.Second / sampleRate }

// hangup sends BYE and records who hung up.
func (e *Engine) hangup(d *diago.DialogClientSession, res *Result, by string) error {
	res.EndedAt, res.HangupBy = time.Now(), by
	return e.bye(d)
}

// encoder returns the G.711 encoder of codec.
func encoder(codec media.Codec) (func([]int16) []byte, error) {
	var f func(int16) uint8
	switch codec.PayloadType {
	case media.CodecAudioUlaw.PayloadType:
		f = g711.EncodeUlawFrame
	case media.CodecAudioAlaw.PayloadType:
		f = g711.EncodeAlawFrame
	default:
		return nil, fmt.Errorf("negotiated codec %s: want PCMU or PCMA", codec.Name)
	}
	out := make([]byte, frameSamples)
	return func(pcm []int16) []byte {
		for i, s := range pcm {
			out[i] = f(s)
		}
		return out[:len(pcm)]
	}, nil
}

// decode appends the PCM of a G.711 payload of payload type pt to pcm; other
// payload types decode to nothing.
func decode(pcm []int16, pt uint8, payload []byte) []int16 {
	var f func(uint8) int16
	switch pt {
	case media.CodecAudioUlaw.PayloadType:
		f = g711.DecodeUlawFrame
	case media.CodecAudioAlaw.PayloadType:
		f = g711.DecodeAlawFrame
	default:
		return pcm
	}
	for _, b := range payload {
		pcm = append(pcm, f(b))
	}
	return pcm
}

// loud reports whether a frame is voice rather than silence: its mean
// absolute amplitude reaches threshold.
func loud(pcm []int16, threshold int) bool {
	return voice.Energy(pcm) >= threshold
}
