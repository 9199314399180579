// Command standin-llm serves llmtest's demo dialogue (a restaurant's
// reservation agent) as an OpenAI-compatible chat-completions endpoint:
// a stand-in for a hosted model, for `make run` and trying an Agent's
// spec.conversation.llm without one. Point the Agent's url at
// http://ADDR/v1 (the operator must run with --dev for http).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/switchboard-dev/switchboard/internal/conversation/llmtest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8791", "Address to listen on.")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: *addr, Handler: llmtest.Demo(), ReadHeaderTimeout: 5 * time.Second}
	fmt.Printf("standin-llm: a stand-in for a hosted language model (a scripted restaurant reservation dialogue, no model), "+
		"OpenAI-compatible at http://%s/v1\n", *addr)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		slog.Error("standin-llm", "error", err)
		os.Exit(1)
	}
}
