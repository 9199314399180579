package apptest

import (
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zaf/g711"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
)

// StreamingOrg is an organization whose agent streams to the bot at url.
func StreamingOrg(t *testing.T, url string) *Org {
	t.Helper()
	ns := ControlPlane.NewOrganization(t, "org-")
	o := &Org{Ns: ns, Key: CreateKey(t, ns, "")}
	o.Agent = CreateAgent(t, ns, "bot", func(s *switchboardv1.AgentSpec) {
		s.Greeting = ""
		s.Stream = &switchboardv1.StreamSpec{URL: url}
	})
	o.AgentID = o.Agent.ResolvedID()
	return o
}

// WsURL is the ws:// address of a test server.
func WsURL(srv *httptest.Server) string { return "ws" + strings.TrimPrefix(srv.URL, "http") + "/media" }

func Mulaw(pcm []int16) []byte {
	out := make([]byte, len(pcm))
	for i, v := range pcm {
		out[i] = g711.EncodeUlawFrame(v)
	}
	return out
}

// ToneTime is how much of pcm, in 20 ms frames, carries most of its
// energy at hz (Goertzel's algorithm).
func ToneTime(pcm []int16, hz float64) time.Duration {
	const frame = audio.SampleRate / 50
	coeff := 2 * math.Cos(2*math.Pi*hz/audio.SampleRate)
	n := 0
	for i := 0; i+frame <= len(pcm); i += frame {
		var s1, s2, energy float64
		for _, v := range pcm[i : i+frame] {
			s1, s2 = float64(v)+coeff*s1-s2, s1
			energy += float64(v) * float64(v)
		}
		if power := 2 * (s1*s1 + s2*s2 - coeff*s1*s2) / frame; energy > 0 && power > energy/2 {
			n++
		}
	}
	return time.Duration(n) * 20 * time.Millisecond
}
