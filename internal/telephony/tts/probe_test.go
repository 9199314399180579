package tts_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts/ttstest"
)

func TestProbe(t *testing.T) {
	insecure := egress.URLPolicy{AllowInsecure: true}
	answering := func(status int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
				t.Errorf("probe asked %s %s, not GET /v1/models", r.Method, r.URL.Path)
			}
			w.WriteHeader(status)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/v1/"
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	stand := ttstest.New(t, ttstest.Behaviour{})

	for _, tt := range []struct {
		name   string
		policy egress.URLPolicy
		url    string
		want   string // "" reachable, else in the ProbeError
	}{
		{"200", insecure, answering(http.StatusOK), ""},
		{"401 of a hosted API", insecure, answering(http.StatusUnauthorized), ""},
		{"405", insecure, answering(http.StatusMethodNotAllowed), ""},
		{"the stand-in's 404", insecure, stand.URL, ""},
		{"a gateway's 503", insecure, answering(http.StatusServiceUnavailable), "503"},
		{"closed", insecure, closed.URL + "/v1?key=hunter2", "connection refused"},
		{"slow", insecure, slow.URL, "did not answer in time"},
		{"loopback under the production policy", egress.URLPolicy{}, strings.Replace(stand.URL, "http:", "https:", 1),
			"refused by the address policy"},
		{"http under the production policy", egress.URLPolicy{}, stand.URL, "URL is refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tts.Probe(context.Background(), tt.policy, nil, tt.url, 300*time.Millisecond)
			var perr *tts.ProbeError
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Probe: %v, want reachable", err)
			case tt.want == "":
			case !errors.As(err, &perr):
				t.Fatalf("Probe: %v, want a ProbeError", err)
			case !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Probe: %q, want it to say %q", err, tt.want)
			case strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "/v1"):
				t.Fatalf("Probe: %q names the URL's path or query", err)
			}
		})
	}
	if n := len(stand.Requests()); n != 0 {
		t.Fatalf("the probe made the stand-in speak %d times", n)
	}
}
