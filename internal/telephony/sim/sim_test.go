package sim

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

var placedAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func req(to string) telephony.Request {
	return telephony.Request{CallID: "c1", From: "+15550000000", To: to}
}

func TestNumberPlan(t *testing.T) {
	tm := DefaultTimings()
	tests := []struct {
		to       string
		want     telephony.Disposition
		reason   string
		duration time.Duration
	}{
		{"+15551230000", telephony.Answered, "agent_hangup", tm.Talk},
		{"+15551231234", telephony.Answered, "agent_hangup", tm.Talk},
		{"+15551230001", telephony.Busy, "dial_busy", 0},
		{"+15551230002", telephony.NoAnswer, "no_answer", 0},
		{"+15551230003", telephony.AnsweringMachine, "voicemail", tm.Voicemail},
		{"+15551230004", telephony.Rejected, "dial_rejected", 0},
		{"+15551230005", telephony.Unreachable, "dial_failed", 0},
		{"+15551230006", telephony.InvalidNumber, "invalid_destination", 0},
		{"+15551230007", telephony.CarrierFailure, "carrier_error", 0},
	}
	for _, tt := range tests {
		t.Run(tt.to, func(t *testing.T) {
			c, ctx, r := New(tm), context.Background(), req(tt.to)
			if err := c.Admit(ctx, r); err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if err := c.Dial(ctx, r, placedAt); err != nil {
				t.Fatalf("Dial: %v", err)
			}
			checkRinging(t, c, r)
			answeredAt := placedAt.Add(tm.Ring)
			if tt.want.Connected() {
				checkConnected(t, c, r, answeredAt, tt.duration)
			}
			endedAt := answeredAt.Add(tt.duration)
			for _, now := range []time.Time{endedAt, endedAt.Add(time.Hour)} {
				p := progress(t, c, r, now)
				if p.Phase != telephony.Ended || p.Disposition != tt.want || p.DisconnectionReason != tt.reason ||
					p.Duration != tt.duration || p.EndedAt == nil || !p.EndedAt.Equal(endedAt) {
					t.Errorf("at %v: got %+v, want ended %s/%s after %v at %v", now, p, tt.want, tt.reason, tt.duration, endedAt)
				}
				if tt.want.Connected() != (p.AnsweredAt != nil) {
					t.Errorf("AnsweredAt = %v for %s", p.AnsweredAt, tt.want)
				}
			}
		})
	}
}

func checkRinging(t *testing.T, c *Carrier, r telephony.Request) {
	t.Helper()
	ring := DefaultTimings().Ring
	p := progress(t, c, r, placedAt.Add(ring/2))
	if p.Phase != telephony.Ringing || p.NextCheck != ring/2 || p.AnsweredAt != nil || p.EndedAt != nil {
		t.Errorf("mid-ring: got %+v", p)
	}
}

func checkConnected(t *testing.T, c *Carrier, r telephony.Request, answeredAt time.Time, talk time.Duration) {
	t.Helper()
	p := progress(t, c, r, answeredAt.Add(talk/2))
	if p.Phase != telephony.Connected || p.NextCheck != talk-talk/2 || p.AnsweredAt == nil ||
		!p.AnsweredAt.Equal(answeredAt) || p.EndedAt != nil || p.Disposition != "" {
		t.Errorf("mid-talk: got %+v", p)
	}
}

func progress(t *testing.T, c *Carrier, r telephony.Request, now time.Time) telephony.Progress {
	t.Helper()
	p, err := c.Progress(context.Background(), r, placedAt, now)
	if err != nil {
		t.Fatalf("Progress(%v): %v", now, err)
	}
	return p
}

func TestDispatchErrors(t *testing.T) {
	tests := []struct{ to, code string }{
		{"+15551230008", telephony.CodeDispatchError},
		{"+15551230009", telephony.CodeDispatchFailed},
	}
	for _, tt := range tests {
		t.Run(tt.to, func(t *testing.T) {
			c, ctx, r := New(DefaultTimings()), context.Background(), req(tt.to)
			errs := map[string]error{"Admit": c.Admit(ctx, r), "Dial": c.Dial(ctx, r, placedAt)}
			// Dial must give the same answer when repeated after a restart.
			errs["Dial again"] = c.Dial(ctx, r, placedAt)
			for name, err := range errs {
				de, ok := telephony.AsDispatchError(err)
				if !ok || de.Code != tt.code {
					t.Errorf("%s: got %v, want DispatchError %s", name, err, tt.code)
				}
			}
		})
	}
}

func TestEmptyTo(t *testing.T) {
	c, ctx := New(DefaultTimings()), context.Background()
	err := c.Admit(ctx, req(""))
	if err == nil {
		t.Fatal("Admit with empty To: want error")
	}
	if _, ok := telephony.AsDispatchError(err); ok {
		t.Errorf("empty To is not transient, got DispatchError %v", err)
	}
}

func TestDialIdempotent(t *testing.T) {
	c, ctx, r := New(DefaultTimings()), context.Background(), req("+15551230000")
	for range 3 {
		if err := c.Dial(ctx, r, placedAt); err != nil {
			t.Fatalf("Dial: %v", err)
		}
	}
}

// TestProgressPure checks that a fresh carrier, as after a restart, reports
// exactly what the original did.
func TestProgressPure(t *testing.T) {
	r := req("+15551230000")
	for _, off := range []time.Duration{0, 500 * time.Millisecond, time.Second, 3 * time.Second, 5 * time.Second, time.Minute} {
		now := placedAt.Add(off)
		a := progress(t, New(DefaultTimings()), r, now)
		b := progress(t, New(DefaultTimings()), r, now)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("at +%v: %+v != %+v", off, a, b)
		}
	}
}

func TestCustomTimings(t *testing.T) {
	c := New(Timings{Ring: 0, Talk: 90 * time.Second, Voicemail: -time.Second})
	p := progress(t, c, req("+15551230000"), placedAt)
	if p.Phase != telephony.Connected || p.NextCheck != 90*time.Second {
		t.Errorf("zero ring: got %+v", p)
	}
	p = progress(t, c, req("+15551230003"), placedAt)
	if p.Phase != telephony.Ended || p.Duration != 0 || !p.EndedAt.Equal(placedAt) {
		t.Errorf("negative voicemail: got %+v", p)
	}
}
