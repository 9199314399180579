package campaigns

import (
	"math"
	"time"

	"golang.org/x/time/rate"
)

// pacer holds a campaign to its calls per second: a token bucket whose
// burst is two ticks' worth of calls (at least one), so that calls go out
// evenly rather than a second's worth at once, yet a tick that comes late
// (a busy machine) loses none of the calls it was owed. It is told the
// time, so that tests control it.
type pacer struct {
	limiter *rate.Limiter
	perSec  float64
}

func newPacer(perSec float64, tick time.Duration, now time.Time) *pacer {
	p := &pacer{limiter: rate.NewLimiter(rate.Limit(perSec), burstOf(perSec, tick))}
	p.perSec = perSec
	p.limiter.AllowN(now, 0) // starts empty of history: full bucket now
	return p
}

func burstOf(perSec float64, tick time.Duration) int {
	return max(1, int(math.Ceil(2*perSec*tick.Seconds())))
}

// set changes the rate from now on (an edit of the campaign's pacing, or a
// new fair share of its organization's).
func (p *pacer) set(perSec float64, tick time.Duration, now time.Time) {
	if perSec == p.perSec {
		return
	}
	p.perSec = perSec
	p.limiter.SetLimitAt(now, rate.Limit(perSec))
	p.limiter.SetBurstAt(now, burstOf(perSec, tick))
}

// available is how many calls may be placed at now, at most n.
func (p *pacer) available(now time.Time, n int) int {
	return min(n, int(p.limiter.TokensAt(now)))
}

// took takes n calls placed at now.
func (p *pacer) took(now time.Time, n int) {
	if n > 0 {
		p.limiter.AllowN(now, n)
	}
}
