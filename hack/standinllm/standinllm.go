// Package standinllm serves a stand-in for a hosted language model: an
// OpenAI-compatible chat-completions endpoint (streamed, with tool calls)
// that follows a fixed dialogue, a restaurant's reservation desk
// (llmtest.Demo), and is no model at all. It lets an Agent's
// spec.conversation.llm be tried without one.
//
// `make run` serves it on 127.0.0.1:8091 for the sample Agent
// reservations-llm; cmd/standin-llm runs it alone. To converse with a real
// model, point the Agent's conversation.llm.url at an OpenAI-compatible
// endpoint (vLLM, Ollama's /v1, llama.cpp's server, a hosted API) and its
// model at one it serves.
package standinllm

import (
	"context"
	"net/http"
	"time"

	"github.com/switchboard-dev/switchboard/internal/conversation/llmtest"
)

// Serve serves the stand-in at addr (its base URL is http://addr/v1) until
// ctx ends.
func Serve(ctx context.Context, addr string) error {
	srv := &http.Server{Addr: addr, Handler: llmtest.Demo(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}
