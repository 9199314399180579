package telephony

import (
	"context"
	"io"
	"time"
)

// Router sends each call to the carrier it goes out on: a SIP trunk when
// the request names one, the simulated carrier otherwise. A nil carrier is
// one that is not enabled: its calls fail with dispatch_failed.
type Router struct {
	Sim Dialer
	SIP Dialer
}

var _ Dialer = (*Router)(nil)

// errNoCarrier is the dispatch failure of a call whose carrier is off.
func errNoCarrier(req Request) error {
	if req.Trunk != "" {
		return &DispatchError{Code: CodeDispatchFailed, Reason: "SIP calling is not enabled on this Switchboard"}
	}
	return &DispatchError{Code: CodeDispatchFailed,
		Reason: "the agent has no trunkRef and the simulated carrier is not enabled"}
}

func (r *Router) pick(req Request) Dialer {
	if req.Trunk != "" {
		return r.SIP
	}
	return r.Sim
}

func (r *Router) Admit(ctx context.Context, req Request) error {
	d := r.pick(req)
	if d == nil {
		return errNoCarrier(req)
	}
	return d.Admit(ctx, req)
}

func (r *Router) Dial(ctx context.Context, req Request, placedAt time.Time) error {
	d := r.pick(req)
	if d == nil {
		return errNoCarrier(req)
	}
	return d.Dial(ctx, req, placedAt)
}

func (r *Router) Progress(ctx context.Context, req Request, placedAt, now time.Time) (Progress, error) {
	d := r.pick(req)
	if d == nil {
		return Progress{}, errNoCarrier(req)
	}
	return d.Progress(ctx, req, placedAt, now)
}

func (r *Router) Recording(ctx context.Context, req Request, p Progress) (io.ReadCloser, error) {
	d := r.pick(req)
	if d == nil {
		return nil, errNoCarrier(req)
	}
	return d.Recording(ctx, req, p)
}

func (r *Router) Transcript(ctx context.Context, req Request, p Progress) ([]Turn, error) {
	d := r.pick(req)
	if d == nil {
		return nil, errNoCarrier(req)
	}
	return d.Transcript(ctx, req, p)
}

func (r *Router) Release(ctx context.Context, req Request) {
	if d := r.pick(req); d != nil {
		d.Release(ctx, req)
	}
}

func (r *Router) Hangup(ctx context.Context, req Request) error {
	d := r.pick(req)
	if d == nil {
		return errNoCarrier(req)
	}
	return d.Hangup(ctx, req)
}
