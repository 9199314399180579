package media

// initialBuffer is the utterance buffer's first size, in samples (3 s).
const initialBuffer = 3 * SampleRate

// Event is what a frame changed in a Segmenter.
type Event int

const (
	// SpeechStarted: the callee started speaking (the time to stop
	// talking over them: barge-in).
	SpeechStarted Event = iota + 1
	// UtteranceEnded: an utterance is complete, at the end of speech or at
	// the length bound. Segmenter.Utterance holds it until the next Write.
	UtteranceEnded
)

// Utterance is one stretch of speech.
type Utterance struct {
	// PCM is the speech, with the pre-roll before it and without the
	// trailing silence. It is the Segmenter's buffer: copy what you keep.
	PCM []int16
	// Start and End are sample positions in the stream written (End
	// excluded): Start includes the pre-roll, End is the end of the last
	// voiced frame.
	Start, End int64
	// Cut is set when the utterance reached the length bound while the
	// callee was still speaking: the next one goes on from here.
	Cut bool
}

// Segmenter cuts a stream of audio into utterances: speech starts after
// VADConfig.Start of voice and ends after VADConfig.Hangover of silence.
// Its memory is bounded (one utterance of MaxUtterance and the pre-roll);
// Write allocates only to grow the utterance buffer toward that bound, as
// the first long utterances come, never per frame. Not safe for
// concurrent use.
type Segmenter struct {
	vad                       *VAD
	startFrames, hangFrames   int
	maxSamples, prerollFrames int

	// pending is a partial frame carried over to the next Write.
	pending [FrameSamples]int16
	npend   int
	pos     int64 // samples processed (whole frames)

	// ring holds the last frames while no one speaks: the pre-roll and the
	// voice that has not started speech yet.
	ring      []int16
	ringFrame int // frames in the ring
	ringNext  int // where the next frame goes

	speaking    bool
	voicedRun   int // voiced frames in a row, before speech started
	silentRun   int // silent frames in a row, during speech
	buf         []int16
	n           int   // samples of buf in use
	voicedN     int   // samples of buf up to the end of the last voiced frame
	start       int64 // stream position of buf[0]
	last        Utterance
	handler     func(Event)
	frameBuffer [FrameSamples]int16
}

// NewSegmenter returns a Segmenter that calls handle (on the writer's
// goroutine) for each event.
func NewSegmenter(cfg VADConfig, handle func(Event)) *Segmenter {
	cfg = cfg.withDefaults()
	s := &Segmenter{
		vad:           NewVAD(cfg),
		startFrames:   frames(cfg.Start),
		hangFrames:    frames(cfg.Hangover),
		prerollFrames: frames(cfg.PreRoll),
		handler:       handle,
	}
	s.maxSamples = frames(cfg.MaxUtterance) * FrameSamples
	ringFrames := s.prerollFrames + s.startFrames
	s.ring = make([]int16, ringFrames*FrameSamples)
	s.maxSamples = max(s.maxSamples, len(s.ring))
	// Most answers are short: the buffer starts small and grows, up to
	// the bound, as long utterances come (then it stays).
	s.buf = make([]int16, 0, min(s.maxSamples, initialBuffer))
	return s
}

// Write processes pcm, in pieces of any length; frames are cut across
// calls.
func (s *Segmenter) Write(pcm []int16) {
	if s.npend > 0 {
		n := copy(s.pending[s.npend:], pcm)
		s.npend += n
		pcm = pcm[n:]
		if s.npend < FrameSamples {
			return
		}
		s.frameBuffer = s.pending
		s.npend = 0
		s.frame(s.frameBuffer[:])
	}
	for len(pcm) >= FrameSamples {
		s.frame(pcm[:FrameSamples])
		pcm = pcm[FrameSamples:]
	}
	s.npend = copy(s.pending[:], pcm)
}

// Flush ends the utterance in progress, if any, as at the end of speech:
// for the end of the stream (the callee hung up while speaking).
func (s *Segmenter) Flush() {
	if s.speaking {
		s.end(false)
	}
}

// Pos is the stream position after the last whole frame written.
func (s *Segmenter) Pos() int64 { return s.pos }

// Utterance is the last utterance ended; valid until the next Write.
func (s *Segmenter) Utterance() Utterance { return s.last }

func (s *Segmenter) frame(f []int16) {
	voiced := s.vad.Voiced(f)
	s.pos += FrameSamples
	if !s.speaking {
		s.idle(f, voiced)
		return
	}
	if s.n+FrameSamples > s.maxSamples {
		// The bound: hand over what we have and go on speaking in a new
		// utterance.
		s.end(true)
		s.speaking = true
		s.start = s.pos - FrameSamples
	}
	s.buf = append(s.buf[:s.n], f...)
	s.n += FrameSamples
	if voiced {
		s.silentRun = 0
		s.voicedN = s.n
		return
	}
	s.silentRun++
	if s.silentRun >= s.hangFrames {
		s.end(false)
	}
}

// idle keeps f in the pre-roll ring and starts speech after enough voice.
func (s *Segmenter) idle(f []int16, voiced bool) {
	copy(s.ring[s.ringNext*FrameSamples:], f)
	s.ringNext = (s.ringNext + 1) % (len(s.ring) / FrameSamples)
	s.ringFrame = min(s.ringFrame+1, len(s.ring)/FrameSamples)
	if !voiced {
		s.voicedRun = 0
		return
	}
	s.voicedRun++
	if s.voicedRun < s.startFrames {
		return
	}
	// Speech: the utterance starts with the ring's frames, oldest first.
	s.speaking, s.voicedRun, s.silentRun = true, 0, 0
	ringFrames := len(s.ring) / FrameSamples
	first := (s.ringNext - s.ringFrame + ringFrames) % ringFrames
	s.buf = s.buf[:0]
	for i := range s.ringFrame {
		at := ((first + i) % ringFrames) * FrameSamples
		s.buf = append(s.buf, s.ring[at:at+FrameSamples]...)
	}
	s.n = len(s.buf)
	s.voicedN = s.n
	s.start = s.pos - int64(s.n)
	s.ringFrame = 0
	if s.handler != nil {
		s.handler(SpeechStarted)
	}
}

// end hands the utterance to the handler and goes back to listening.
func (s *Segmenter) end(cut bool) {
	n := s.voicedN
	if cut {
		n = s.n
	}
	s.last = Utterance{PCM: s.buf[:n], Start: s.start, End: s.start + int64(n), Cut: cut}
	s.speaking, s.n, s.voicedN, s.silentRun = false, 0, 0, 0
	if s.handler != nil {
		s.handler(UtteranceEnded)
	}
}
