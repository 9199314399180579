package webhook_test

import (
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/webhook"
)

func TestEnvelope(t *testing.T) {
	call := struct {
		ID  string `json:"call_id"`
		URL string `json:"recording_url"`
	}{"call_1", "https://r.example/a?x=1&y=<2>"}
	got, err := webhook.Envelope(webhook.EventCallAnalyzed, call)
	want := `{"event":"call.analyzed","call":{"call_id":"call_1","recording_url":"https://r.example/a?x=1&y=<2>"}}`
	if err != nil || string(got) != want {
		t.Fatalf("Envelope = %s, %v\nwant %s", got, err, want)
	}
	if _, err := webhook.Envelope(webhook.EventTest, func() {}); err == nil {
		t.Fatal("Envelope of an unencodable call: no error")
	}
}

func TestKinds(t *testing.T) {
	want := []string{"call.started", "call.ended", "call.analyzed", "campaign.started", "campaign.paused", "campaign.completed"}
	if strings.Join(webhook.Kinds, ",") != strings.Join(want, ",") {
		t.Fatalf("Kinds = %v", webhook.Kinds)
	}
	for _, k := range want {
		if !webhook.ValidKind(k) {
			t.Errorf("ValidKind(%q) = false", k)
		}
	}
	for _, k := range []string{"test", "", "call.Started", "call.*"} {
		if webhook.ValidKind(k) {
			t.Errorf("ValidKind(%q) = true", k)
		}
	}
}
