package streambot

import (
	"context"
	"errors"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony/stream"
)

func dial(t *testing.T, token string) (*stream.Session, error) {
	t.Helper()
	srv := httptest.NewServer(Handler{Token: "s3cret"})
	t.Cleanup(srv.Close)
	return stream.Dial(context.Background(), stream.Config{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), Token: token,
		CallID: "call_1", Namespace: "demo", Policy: egress.URLPolicy{AllowInsecure: true}})
}

// The bot echoes the callee and hangs up on #.
func TestEchoAndHangup(t *testing.T) {
	s, err := dial(t, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pcm := make([]int16, 160)
	for f := range 75 { // 1.5 s of tone: more than the bot holds back
		for i := range pcm {
			pcm[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(f*160+i)/8000))
		}
		s.Inbound(pcm, time.Now())
	}
	deadline := time.Now().Add(5 * time.Second)
	heard := false
	for !heard && time.Now().Before(deadline) {
		s.NextFrame(pcm)
		for _, v := range pcm {
			heard = heard || v > 4000
		}
		if !heard {
			time.Sleep(5 * time.Millisecond) // waiting for the bot's echo over the network
		}
	}
	if !heard {
		t.Fatal("the bot did not echo the callee")
	}
	s.DTMF('#')
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the bot did not hang up on #")
	}
	if err := s.Err(); !errors.Is(err, stream.ErrBotHangup) {
		t.Errorf("Err = %v, want the bot's hangup", err)
	}
}

func TestRefusesAWrongToken(t *testing.T) {
	_, err := dial(t, "guess")
	var f *stream.Failure
	if !errors.As(err, &f) || !strings.Contains(f.Detail, "401") {
		t.Errorf("Dial = %v, want a 401 failure", err)
	}
}
