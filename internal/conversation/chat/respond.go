package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/egress"
)

// response is the state of one response across its tool rounds.
type response struct {
	id    int
	chars int // characters said so far
}

// completion is what one streamed completion said and called.
type completion struct {
	text   string
	calls  []toolCall
	capped bool // cut at MaxResponseChars
}

// toolCall is a call the model streamed.
type toolCall struct {
	name, arguments string
}

// respond answers req: it streams the model's answer as chunks, runs the
// tools it calls and asks again with their results, and ends with a
// Complete chunk.
func (s *session) respond(ctx context.Context, req conversation.Request) error {
	r := &response{id: req.ResponseID}
	messages := s.messages(req)
	for round := 0; ; round++ {
		last := round == MaxToolRounds
		out, err := s.complete(ctx, messages, last, r)
		if err != nil {
			return err
		}
		if out.capped || len(out.calls) == 0 || last {
			return s.emit(ctx, conversation.Chunk{ResponseID: r.id, Complete: true})
		}
		final, more, err := s.runTools(ctx, r, out)
		if err != nil {
			return err
		}
		if final != nil {
			return s.emit(ctx, *final)
		}
		messages = append(messages, more...)
	}
}

// errNoFirstToken and errStalled are why a completion's attempt was
// canceled.
var (
	errNoFirstToken = errors.New("no first token")
	errStalled      = errors.New("stalled")
)

// complete streams one completion: its content as chunks (up to the
// response's character cap), its tool calls gathered.
func (s *session) complete(ctx context.Context, messages []openai.ChatCompletionMessageParamUnion,
	noTools bool, r *response) (completion, error) {
	attempt, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var started atomic.Bool
	timer := time.AfterFunc(s.firstTok, func() {
		if started.Load() {
			cancel(errStalled)
		} else {
			cancel(errNoFirstToken)
		}
	})
	defer timer.Stop()

	stream := s.client.Chat.Completions.NewStreaming(attempt, s.params(messages, noTools))
	defer func() { _ = stream.Close() }()
	var out completion
	var text strings.Builder
	calls := gathered{}
	events := 0
	for stream.Next() {
		events++
		chunk := stream.Current()
		if len(chunk.Choices) == 0 {
			continue
		}
		delta := chunk.Choices[0].Delta
		if delta.Content == "" && len(delta.ToolCalls) == 0 {
			continue
		}
		started.Store(true)
		// The clock stops while the chunk waits for the loop: a slow
		// reader is not a stalled model.
		timer.Stop()
		calls.add(delta.ToolCalls)
		said, capped, err := s.say(ctx, r, delta.Content)
		text.WriteString(said)
		timer.Reset(s.firstTok)
		if err != nil {
			return out, err
		}
		if capped {
			// Closing the stream drops the connection: the model's
			// endless answer is not read any further.
			return completion{text: text.String(), capped: true}, nil
		}
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		return out, s.describe(attempt, err, events)
	}
	if events == 0 {
		return out, fault("the endpoint's answer was not an event stream of chat completion chunks")
	}
	return completion{text: text.String(), calls: calls.inOrder()}, nil
}

// say emits content as a chunk, cut where the response reaches
// MaxResponseChars (capped), and returns what it said.
func (s *session) say(ctx context.Context, r *response, content string) (string, bool, error) {
	capped := false
	if room := MaxResponseChars - r.chars; utf8.RuneCountInString(content) >= room {
		content, capped = cutRunes(content, room), true
	}
	if content == "" {
		return "", capped, nil
	}
	r.chars += utf8.RuneCountInString(content)
	return content, capped, s.emit(ctx, conversation.Chunk{ResponseID: r.id, Content: content})
}

// gathered are a stream's tool calls by index, as their deltas come: the
// first names the call, the others add to its arguments.
type gathered map[int64]*toolCall

func (g gathered) add(deltas []openai.ChatCompletionChunkChoiceDeltaToolCall) {
	for _, d := range deltas {
		c := g[d.Index]
		if c == nil {
			c = &toolCall{}
			g[d.Index] = c
		}
		if c.name == "" {
			c.name = d.Function.Name
		}
		c.arguments += d.Function.Arguments
	}
}

func (g gathered) inOrder() []toolCall {
	indexes := make([]int64, 0, len(g))
	for i := range g {
		indexes = append(indexes, i)
	}
	sort.Slice(indexes, func(a, b int) bool { return indexes[a] < indexes[b] })
	calls := make([]toolCall, 0, len(g))
	for _, i := range indexes {
		calls = append(calls, *g[i])
	}
	return calls
}

// params is the chat-completions request; the last round offers the tools
// but asks for none, so that the model answers in words.
func (s *session) params(messages []openai.ChatCompletionMessageParamUnion, noTools bool) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{Model: s.cfg.Model, Messages: messages, Tools: s.tools.defs}
	if s.cfg.Temperature != nil {
		p.Temperature = openai.Float(*s.cfg.Temperature)
	}
	if s.cfg.MaxTokens > 0 {
		// max_tokens rather than max_completion_tokens: the name every
		// OpenAI-compatible server knows.
		p.MaxTokens = openai.Int(int64(s.cfg.MaxTokens))
	}
	if noTools && len(s.tools.defs) > 0 {
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
	}
	return p
}

// describe is a failed completion's fault, without the endpoint's body
// (which may echo the transcript) or its key.
func (s *session) describe(attempt context.Context, err error, events int) *conversation.Error {
	var apiErr *openai.Error
	var refused *egress.RefusedAddrError
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	var streamErr *ssestream.StreamError
	switch cause := context.Cause(attempt); {
	case errors.Is(cause, errNoFirstToken):
		return fault(fmt.Sprintf("no first token within %s", s.firstTok))
	case errors.Is(cause, errStalled):
		return fault(fmt.Sprintf("the answer stalled for %s", s.firstTok))
	case errors.As(err, &apiErr):
		return fault(fmt.Sprintf("the endpoint answered HTTP %d", apiErr.StatusCode))
	case errors.As(err, &refused):
		return fault("the model's endpoint: " + refused.Error())
	case errors.Is(err, errAnswerTooLong):
		return fault(fmt.Sprintf("the endpoint's answer went past %d MiB", maxStreamBytes>>20))
	case errors.As(err, &syntax), errors.As(err, &typeErr):
		return fault("the endpoint sent a malformed event stream")
	case errors.As(err, &streamErr):
		return fault("the endpoint sent an error in its stream")
	case events > 0:
		return fault("the endpoint's stream broke off")
	}
	return fault("the endpoint could not be reached")
}

// cutRunes is s's first n runes.
func cutRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// errAnswerTooLong is an endpoint's answer past maxStreamBytes.
var errAnswerTooLong = errors.New("answer too long")

// capBody bounds what is read of an answer's body.
func capBody(limit int64) option.Middleware {
	return func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if resp != nil && resp.Body != nil {
			resp.Body = &cappedBody{ReadCloser: resp.Body, left: limit}
		}
		return resp, err
	}
}

type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errAnswerTooLong
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
