package engine

import (
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

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	voice "github.com/switchboard-dev/switchboard/internal/telephony/media"
)

// secondLeg is a bridged or warm transfer's call to the person, on the
// callee's trunk. Its writer sends the whisper, then (joined) the callee's
// audio; its reader decodes the person's keys and (joined) audio for the
// callee's writer (callMedia.fill).
type secondLeg struct {
	e          *Engine
	d          *diago.DialogClientSession
	release    func()
	answeredAt time.Time
	eventPT    uint8
	// toPerson carries the callee's audio to the person, fromPerson the
	// person's to the callee, while joined.
	toPerson, fromPerson *pcmRing
	joined               atomic.Bool
	// heardAt is when the callee was first sent the person's audio
	// (UnixNano; 0: not yet).
	heardAt atomic.Int64
	// whisper is being said to the person (nil: nothing is); its done is
	// closed once it was.
	whisper atomic.Pointer[playback]
	// keys are the person's keys; when full, keys are dropped.
	keys chan byte
	// ear, when a warm transfer's person may accept by speech, cuts what
	// they say before the bridge into utterances for utters (dropped when
	// it is full); nil otherwise.
	ear    *voice.Segmenter
	utters chan []int16
	stop   chan struct{}
	wg     sync.WaitGroup
}

// dial calls the person on the callee's trunk: the trunk's limits count
// the call (CallSpec.SecondLeg), its credentials answer challenges, and
// it rings for t.RingTimeout at most. It returns the answered leg with
// its media running, or nil with the failure in out.
func (lc *liveCall) dial(ctx context.Context, t Transfer, out *telephony.TransferOutcome) *secondLeg {
	release := func() {}
	if lc.spec.SecondLeg != nil {
		r, err := lc.spec.SecondLeg(ctx)
		if err != nil {
			out.Result, out.Detail = switchboardv1.TransferFailed, err.Error()
			return nil
		}
		release = r
	}
	leg, err := lc.invitePerson(ctx, t, out)
	if leg == nil || err != nil {
		release()
		if err != nil {
			out.Result, out.Detail = switchboardv1.TransferFailed, err.Error()
		}
		return nil
	}
	leg.release = release
	if t.Mode == switchboardv1.TransferWarm && lc.spec.Recognizer != nil {
		leg.ear = voice.NewSegmenter(lc.e.cfg.VAD, leg.onSpeech)
	}
	if err := leg.start(); err != nil {
		leg.close()
		out.Result, out.Detail = switchboardv1.TransferFailed, err.Error()
		return nil
	}
	return leg
}

// invitePerson sends the INVITE as Place does (From is the agent's number,
// or the callee's with ShowCalleeAsCaller; the call's headers go along)
// and ACKs the answer. It returns nil without an error when the person
// did not answer (out says why).
func (lc *liveCall) invitePerson(ctx context.Context, t Transfer, out *telephony.TransferOutcome) (*secondLeg, error) {
	e := lc.e
	recipient, transport, err := lc.trunk.target(t.To)
	if err != nil {
		return nil, err
	}
	d, err := e.dg.NewDialog(recipient, diago.NewDialogOptions{TransportID: transport})
	if err != nil {
		return nil, fmt.Errorf("new dialog: %w", err)
	}
	d.InviteRequest.SetDestination(lc.trunk.Destination.String())
	trunk := lc.trunk
	trunk.RingTimeout = t.RingTimeout
	spec := CallSpec{CallID: lc.spec.CallID, From: lc.spec.From, To: t.To, Headers: lc.spec.Headers}
	if t.ShowCalleeAsCaller {
		spec.From = lc.spec.To
	}
	res, up, err := e.invite(ctx, d, trunk, spec, recipient, newMediaWatch(e.cfg.Guard))
	if !up {
		_ = d.Close()
		if err == nil {
			notAnswered(ctx, res, out)
		}
		return nil, err
	}
	if err := e.cfg.Guard.remoteTarget(ctx, d.InviteResponse); err != nil {
		_ = d.Close()
		return nil, err
	}
	if err := e.cfg.Guard.media(&d.DialogMedia); err != nil {
		return nil, errors.Join(err, e.ackBye(ctx, d), d.Close())
	}
	if err := d.Ack(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("ack: %w", err), e.bye(d), d.Close())
	}
	out.SIPStatus = res.Outcome.StatusCode
	return &secondLeg{e: e, d: d, answeredAt: res.AnsweredAt, toPerson: newPCMRing(), fromPerson: newPCMRing(),
		keys: make(chan byte, 16), utters: make(chan []int16, 2), stop: make(chan struct{})}, nil
}

// notAnswered says why the person's phone did not answer: busy (486,
// 600), refused (403, 603), no answer (the ring timeout, 408, 480, 487),
// else failed.
func notAnswered(ctx context.Context, res Result, out *telephony.TransferOutcome) {
	o := res.Outcome
	out.SIPStatus = o.StatusCode
	switch {
	case ctx.Err() != nil:
		out.Result, out.Detail = switchboardv1.TransferFailed, "the callee's call ended while the person's phone rang"
	case o.RingTimeout || res.Answered:
		out.Result, out.Detail = switchboardv1.TransferNoAnswer, "the person did not answer"
	case o.TransportError:
		out.Result, out.Detail = switchboardv1.TransferFailed, "the person's call could not be placed"
	case o.StatusCode == 486 || o.StatusCode == 600:
		out.Result, out.Detail = switchboardv1.TransferBusy, fmt.Sprintf("the person's line is busy (%d)", o.StatusCode)
	case o.StatusCode == 403 || o.StatusCode == 603:
		out.Result, out.Detail = switchboardv1.TransferRefused, fmt.Sprintf("the person's line refused the call (%d)", o.StatusCode)
	case o.StatusCode == 408 || o.StatusCode == 480 || o.StatusCode == 487:
		out.Result, out.Detail = switchboardv1.TransferNoAnswer, fmt.Sprintf("the person did not answer (%d)", o.StatusCode)
	default:
		out.Result, out.Detail = switchboardv1.TransferFailed, fmt.Sprintf("the person's call failed (%d)", o.StatusCode)
	}
}

// start runs the leg's writer and reader.
func (l *secondLeg) start() error {
	var wprops diago.MediaProps
	w, err := l.d.AudioWriter(diago.WithAudioWriterMediaProps(&wprops))
	if err != nil {
		return fmt.Errorf("the person's audio writer: %w", err)
	}
	r, err := l.d.AudioReader()
	if err != nil {
		return fmt.Errorf("the person's audio reader: %w", err)
	}
	enc, err := encoder(wprops.Codec)
	if err != nil {
		return err
	}
	l.eventPT = telephoneEventPT(l.d.MediaSession().CommonCodecs())
	l.wg.Go(func() { l.play(w, enc) })
	l.wg.Go(func() { l.listen(r, l.d.RTPPacketReader) })
	return nil
}

// play sends the whisper, the callee's audio once joined, and silence
// otherwise, paced by the RTP writer, until stop or the media closes.
func (l *secondLeg) play(w io.Writer, enc func([]int16) []byte) {
	frame := make([]int16, frameSamples)
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		l.fill(frame)
		if _, err := w.Write(enc(frame)); err != nil {
			return
		}
	}
}

// fill makes frame the whisper's next, else the callee's, else silence.
func (l *secondLeg) fill(frame []int16) {
	clear(frame)
	if p := l.whisper.Load(); p != nil {
		p.pos += copy(frame, p.pcm[p.pos:])
		if p.pos >= len(p.pcm) {
			l.whisper.Store(nil)
			close(p.done)
		}
		return
	}
	if l.joined.Load() {
		l.toPerson.read(frame)
	}
}

// listen decodes the person's keys, and their audio for the callee once
// joined, until the media closes.
func (l *secondLeg) listen(r io.Reader, packets *media.RTPPacketReader) {
	buf := make([]byte, media.RTPBufSize)
	pcm := make([]int16, 0, frameSamples)
	var dtmf dtmfDecoder
	for {
		n, err := r.Read(buf)
		if err != nil {
			return
		}
		if n == 0 {
			continue
		}
		h := packets.PacketHeader
		if h.PayloadType == l.eventPT {
			if key, ok := dtmf.decode(h.SSRC, h.Timestamp, buf[:n]); ok {
				select {
				case l.keys <- key:
				default:
				}
			}
			continue
		}
		pcm = decode(pcm[:0], h.PayloadType, buf[:n])
		switch {
		case len(pcm) == 0:
		case l.joined.Load():
			l.fromPerson.write(pcm)
		case l.ear != nil:
			l.ear.Write(pcm)
		}
	}
}

// onSpeech hands what the person said before the bridge to the accept's
// recognition.
func (l *secondLeg) onSpeech(ev voice.Event) {
	if ev != voice.UtteranceEnded {
		return
	}
	select {
	case l.utters <- slices.Clone(l.ear.Utterance().PCM):
	default:
	}
}

// say has the person hear pcm; the channel is closed once they did (or
// at once when there is nothing to say).
func (l *secondLeg) say(pcm []int16) <-chan struct{} {
	if len(pcm) == 0 {
		return closedChan
	}
	p := &playback{pcm: pcm, done: make(chan struct{})}
	l.whisper.Store(p)
	return p.done
}

// join connects the person and the callee both ways.
func (l *secondLeg) join(m *callMedia) {
	l.toPerson.reset()
	l.fromPerson.reset()
	l.joined.Store(true)
	m.peer.Store(l)
}

// toCallee fills a frame for the callee with the person's audio, and
// notes when the first one went out.
func (l *secondLeg) toCallee(frame []int16) {
	if l.fromPerson.read(frame) && l.heardAt.Load() == 0 {
		l.heardAt.Store(time.Now().UnixNano())
	}
}

// hungUp is done once the person hung up.
func (l *secondLeg) hungUp() <-chan struct{} { return l.d.Context().Done() }

// close hangs the person up unless they did, stops the leg's media and
// frees its place in the trunk's limits.
func (l *secondLeg) close() {
	select {
	case <-l.hungUp():
	default:
		_ = l.e.bye(l.d)
	}
	close(l.stop)
	_ = l.d.DialogMedia.Close()
	l.wg.Wait()
	_ = l.d.Close()
	if l.release != nil {
		l.release()
	}
}
