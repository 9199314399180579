// Command streambot runs the example echo-and-DTMF bot (package
// streambot) on its own: point an Agent's spec.stream.url at
// ws://ADDR/stream (wss behind a TLS proxy outside --dev).
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchboard-dev/switchboard/hack/streambot"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "Address to listen on.")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The token, when set, is what the Agent's authSecretRef Secret holds.
	h := streambot.Handler{Token: os.Getenv("STREAMBOT_TOKEN")}
	slog.Info("streambot listening", "url", "ws://"+*addr+"/stream")
	if err := streambot.Serve(ctx, *addr, h); err != nil {
		slog.Error("streambot", "error", err)
		os.Exit(1)
	}
}
