// Command receiver is an example Switchboard webhook receiver to put in front
// of your backend. It verifies every request with the official Standard
// Webhooks library, ignores redeliveries and logs one line per event.
//
// api/README.md ("A session with a local receiver"): run it with the endpoint's signing secret (the whsec_ value of the
// WebhookEndpoint's Secret), then point the endpoint at
// http(s)://<host>:4000/webhooks/switchboard:
//
//	SWITCHBOARD_WEBHOOK_SECRET=whsec_... go run ./hack/receivers/go
//
// PORT changes the port (default 4000).
package main

import (
	"cmp"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// envelope is the body of every Switchboard webhook; call holds the full
// call object (metadata, analysis, ...), of which this example logs a few
// fields.
type envelope struct {
	Event string `json:"event"` // call.started, call.ended or call.analyzed
	Call  struct {
		CallID      string `json:"call_id"`
		Status      string `json:"status"`
		Disposition string `json:"disposition"`
	} `json:"call"`
}

func main() {
	// One structured line per event, on standard output.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stdout, nil)))
	secret := os.Getenv("SWITCHBOARD_WEBHOOK_SECRET")
	wh, err := standardwebhooks.NewWebhook(secret)
	if secret == "" || err != nil {
		slog.Error("SWITCHBOARD_WEBHOOK_SECRET must be the endpoint's whsec_... signing secret")
		os.Exit(1)
	}

	// Deliveries are at least once: the same event can arrive twice. An
	// in-memory set is enough for this example; in production, record the
	// webhook-id in your database (a unique key), in the same transaction
	// as the work the event triggers.
	var mu sync.Mutex
	seen := map[string]bool{}

	http.HandleFunc("POST /webhooks/switchboard", func(w http.ResponseWriter, r *http.Request) {
		// Verify the raw bytes as received: re-encoded JSON would not match.
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read body", http.StatusRequestEntityTooLarge)
			return
		}
		// Checks the signature (either one, during a secret rotation) and
		// that webhook-timestamp is within 5 minutes, against replays.
		if err := wh.Verify(body, r.Header); err != nil {
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		var e envelope
		if err := json.Unmarshal(body, &e); err != nil {
			http.Error(w, "invalid JSON", http.StatusBadRequest)
			return
		}
		id := r.Header.Get("webhook-id")
		mu.Lock()
		duplicate := seen[id]
		seen[id] = true
		mu.Unlock()
		if !duplicate {
			// Your work goes here. Answer within 10 s; queue anything slower.
			slog.Info(e.Event, "call_id", e.Call.CallID, "status", e.Call.Status,
				"disposition", e.Call.Disposition, "webhook-id", id)
		}
		// Any 2xx acknowledges the delivery; anything else is retried.
		w.WriteHeader(http.StatusNoContent)
	})

	addr := ":" + cmp.Or(os.Getenv("PORT"), "4000")
	slog.Info("listening", "addr", addr, "path", "/webhooks/switchboard")
	srv := &http.Server{Addr: addr, ReadHeaderTimeout: 10 * time.Second}
	slog.Error("server stopped", "err", srv.ListenAndServe())
	os.Exit(1)
}
