// Command standin-llm serves package standinllm's stand-in model (a fixed
// restaurant reservation dialogue, no model) at http://ADDR/v1.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchboard-dev/switchboard/hack/standinllm"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8091", "Address to listen on.")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("standin-llm: a stand-in for a hosted language model (a fixed restaurant reservation dialogue, no model), "+
		"OpenAI-compatible at http://%s/v1\n", *addr)
	if err := standinllm.Serve(ctx, *addr); err != nil {
		slog.Error("standin-llm", "error", err)
		os.Exit(1)
	}
}
