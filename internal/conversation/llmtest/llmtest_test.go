package llmtest

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func client(url string) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	return &c
}

func twoCalls() *Server {
	return New(Turn{Say: "Checking both. ", Rounds: [][]ToolCall{{
		{Name: "check", Arguments: `{"time":"19:00","party_size":4}`},
		{Name: "check", Arguments: `{"time":"20:00","party_size":4}`},
	}}, Then: "Both are free."})
}

func TestStreamedToolCallsAssembleAsOpenAIsDo(t *testing.T) {
	url := Start(t, twoCalls())
	stream := client(url).Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "standin", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Seven or eight?")},
	})
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	msg := acc.Choices[0].Message
	if msg.Content != "Checking both. " || acc.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 2 {
		t.Fatalf("accumulated %+v", acc.Choices[0])
	}
	for i, want := range []string{`{"time":"19:00","party_size":4}`, `{"time":"20:00","party_size":4}`} {
		if c := msg.ToolCalls[i]; c.Function.Name != "check" || c.Function.Arguments != want || c.ID == "" {
			t.Errorf("call %d: %+v", i, c)
		}
	}
	if chunks < 10 {
		t.Errorf("%d chunks: the arguments were not streamed in pieces", chunks)
	}
}

func TestTheWireFormat(t *testing.T) {
	url := Start(t, New(Turn{Say: "Hi there."}))
	resp, err := http.Post(url+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"Hello"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	var lines []string
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	if len(lines) != 4 || !strings.Contains(lines[0], `"object":"chat.completion.chunk"`) ||
		!strings.Contains(lines[0], `"role":"assistant"`) || !strings.Contains(lines[2], `"finish_reason":"stop"`) ||
		lines[3] != "data: [DONE]" {
		t.Errorf("stream:\n%s", strings.Join(lines, "\n"))
	}
}

func TestNotStreamed(t *testing.T) {
	url := Start(t, twoCalls())
	res, err := client(url).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "standin", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Seven or eight?")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Choices[0].Message; m.Content != "Checking both. " || len(m.ToolCalls) != 2 || res.Object != "chat.completion" {
		t.Errorf("answer %+v", res)
	}
}

func TestRecordsRequestsAndPicksTurns(t *testing.T) {
	s := New(Turn{Say: "first"}, Turn{When: "menu", Say: "We serve fish."}, Turn{Say: "second"})
	url := Start(t, s)
	c := client(url)
	for _, tc := range []struct {
		messages []openai.ChatCompletionMessageParamUnion
		want     string
	}{
		{[]openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, "first"},
		{[]openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi"), openai.AssistantMessage("first"),
			openai.UserMessage("What's on the MENU?")}, "We serve fish."},
		{[]openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi"), openai.AssistantMessage("first"),
			openai.UserMessage("ok")}, "second"},
		{[]openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi"), openai.UserMessage("(silence)")}, "Are you still there?"},
		{[]openai.ChatCompletionMessageParamUnion{openai.UserMessage("a"), openai.UserMessage("b"), openai.UserMessage("c")},
			"Sorry, could you say that again?"},
	} {
		res, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "m", Messages: tc.messages})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Choices[0].Message.Content; got != tc.want {
			t.Errorf("answered %q, want %q", got, tc.want)
		}
	}
	reqs := s.Requests()
	if len(reqs) != 5 || reqs[1].Messages[2].Content != "What's on the MENU?" || reqs[0].Header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("recorded %+v", reqs)
	}
}

func TestFaultStatus(t *testing.T) {
	s := New()
	s.SetFault(Status429)
	_, err := client(Start(t, s)).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Errorf("error %v", err)
	}
}

func TestDemoGreetsWhenTheAgentWaits(t *testing.T) {
	res, err := client(Start(t, Demo())).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello?")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Choices[0].Message.Content; !strings.HasPrefix(got, "Hello, this is the reservation desk") || !strings.Contains(got, "how many people") {
		t.Errorf("the demo opened with %q", got)
	}
}
