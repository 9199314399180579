package engine

import "time"

// frameDuration is how long a frame of frameSamples plays.
const frameDuration = time.Second / 50

// placeLine places the agent's line whose audio p played (nil: it had
// none, or the writer had stopped) on the call's timeline: from its first
// frame, for as long as the frames it played (the recording lays them end
// to end); a line cut by barge-in ends where it was cut. The line is the last agent event not
// yet placed: lines are said one at a time, each before the next is
// written.
func (r *Result) placeLine(p *playback, answeredAt time.Time) {
	for i := len(r.Events) - 1; i >= 0; i-- {
		e := &r.Events[i]
		if e.Speaker != SpeakerAgent || e.Note {
			continue
		}
		if e.Start != 0 || e.End != 0 {
			return // placed already: this audio had no line of its own
		}
		e.Start = e.At.Sub(answeredAt)
		e.End = e.Start
		if p != nil && p.frames > 0 {
			e.Start = p.first.Sub(answeredAt)
			e.End = e.Start + time.Duration(p.frames)*frameDuration
		}
		return
	}
}

// placeEvents gives every event its place on the call's timeline (offsets
// from the answer, as the recording's), so that a player can seek to it:
// what placeLine and the utterances did not place (keys, a gather's "no
// answer", notes, a line the call ended during) is placed at the moment
// it happened.
func (r *Result) placeEvents() {
	for i := range r.Events {
		e := &r.Events[i]
		if (e.Start != 0 || e.End != 0) || e.At.IsZero() || r.AnsweredAt.IsZero() {
			continue
		}
		e.Start = max(e.At.Sub(r.AnsweredAt), 0)
		e.End = e.Start
	}
}
