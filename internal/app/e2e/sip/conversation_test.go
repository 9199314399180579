package sip

// Conversations on real SIP calls: baresip speaks the callee's lines, a
// stand-in speech server (OpenAI's transcription protocol; no recognizer's
// accuracy is under test here) hears them in order, and the response
// engine is a stand-in for the organization's model: llmtest (OpenAI's
// streaming chat-completions protocol, with tool calls) or retelltest
// (Retell's custom-LLM WebSocket protocol).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/conversation/llmtest"
	"github.com/switchboard-dev/switchboard/internal/conversation/retell/retelltest"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// speakingCallee starts baresip saying each line at its offset (seconds
// from the answer), and a stand-in speech server that hears the lines in
// order.
func speakingCallee(t *testing.T, lines map[float64]string, order []float64, total time.Duration) (addr, asrURL string) {
	t.Helper()
	voice := make([]int16, int(total.Seconds()*8000))
	var texts []string
	for _, at := range order {
		pcm, err := (&tts.Flite{}).Speak(context.Background(), lines[at])
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		copy(voice[int(at*8000):], pcm)
		texts = append(texts, lines[at])
	}
	var mu sync.Mutex
	asr := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		text := ""
		if len(texts) > 0 {
			text, texts = texts[0], texts[1:]
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"text": text})
	}))
	t.Cleanup(asr.Close)
	return siptest.StartBaresip(t, "+14155550123", voice).Addr, asr.URL + "/v1"
}

func conversationOrg(t *testing.T, calleeAddr, asrURL string, conv *switchboardv1.Conversation) *Org {
	return SIPOrg(t, calleeAddr, nil, func(s *switchboardv1.AgentSpec) {
		s.Conversation = conv
		s.Speech = &switchboardv1.AgentSpeech{URL: asrURL, Protocol: switchboardv1.SpeechProtocolOpenAI, TimeoutMilliseconds: 5000}
	})
}

// transcriptLines are the call's transcript as "role: content" lines.
func transcriptLines(t *testing.T, o *Org, id string) string {
	var b strings.Builder
	for _, u := range PlacedTranscript(t, o, id) {
		u := u.(map[string]any)
		b.WriteString(u["role"].(string) + ": " + u["content"].(string) + "\n")
	}
	return b.String()
}

// The organization's OpenAI-compatible model holds the conversation: it
// is sent the system prompt with the call's variables, the agent speaks
// its begin message and each streamed answer, and its end_call hangs up
// after the last line.
func TestSIPConversationWithAnOpenAICompatibleModel(t *testing.T) {
	g := NewWithT(t)
	model := llmtest.Demo()
	modelURL := llmtest.Start(t, model)
	// Each line comes a second after the agent's last words.
	addr, asr := speakingCallee(t, map[float64]string{5: "I would like a table", 11.5: "four people", 18: "seven pm"},
		[]float64{5, 11.5, 18}, 32*time.Second)
	o := conversationOrg(t, addr, asr, &switchboardv1.Conversation{
		LLM:          &switchboardv1.ConversationLLM{URL: modelURL, Model: "standin-demo", MaxTokens: 250, FirstTokenTimeoutMs: 5000},
		SystemPrompt: "You book tables for {{customer_name}}.",
		BeginMessage: "Hello {{customer_name}}, this is the reservation desk of Chez Ada.",
		Tools:        &switchboardv1.ConversationTools{BuiltIn: []string{switchboardv1.ToolEndCall}},
	})
	id := o.CreateCall(t, "+14155550123", nil)
	call := o.WaitLongAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"))
	lines := transcriptLines(t, o, id)
	for _, want := range []string{
		"agent: Hello Ada, this is the reservation desk of Chez Ada.",
		"user: I would like a table",
		"agent: Lovely. For how many people should I book the table?",
		"user: four people",
		"agent: Thank you. And at what time would you like to come?",
		"user: seven pm",
		"agent: Perfect, I have noted your reservation. We look forward to seeing you. Goodbye!",
	} {
		g.Expect(lines).To(ContainSubstring(want+"\n"), "transcript:\n%s", lines)
	}
	reqs := model.Requests()
	g.Expect(reqs).NotTo(BeEmpty())
	g.Expect(reqs[0].Messages[0].Content).To(Equal("You book tables for Ada."), "the prompt with the call's variables")
}

// A server written for Retell's custom-LLM WebSocket (the Python demo's
// opening order) holds the conversation: it is dialed at <url>/<call_id>,
// told the call's details when it asks, sent the transcript, and its
// end_call hangs up once its last words were spoken.
func TestSIPConversationWithARetellCustomLLMServer(t *testing.T) {
	g := NewWithT(t)
	server := retelltest.New(t, retelltest.Options{Order: retelltest.OrderPython,
		Config: retelltest.Config{CallDetails: true}, Begin: "Hello from the clinic.",
		Answer: func(r retelltest.Received) []retelltest.Event {
			id := *r.ResponseID
			return []retelltest.Event{retelltest.Chunk(id, "Thank you, ", false),
				retelltest.Chunk(id, "see you on Friday. Goodbye.", true).With("end_call", true)}
		}})
	addr, asr := speakingCallee(t, map[float64]string{3.5: "yes I will come"}, []float64{3.5}, 15*time.Second)
	o := conversationOrg(t, addr, asr, &switchboardv1.Conversation{
		LLMWebSocket: &switchboardv1.ConversationWebSocket{URL: server.URL,
			ConnectTimeoutSeconds: 5}})
	id := o.CreateCall(t, "+14155550123", nil)
	call := o.WaitLongAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"))
	lines := transcriptLines(t, o, id)
	g.Expect(lines).To(ContainSubstring("agent: Hello from the clinic.\nuser: yes I will come\nagent: Thank you, see you on Friday. Goodbye.\n"))
	g.Expect(server.Paths()).To(ContainElement("/llm-websocket/"+id), "dialed at <url>/<call_id>")
	g.Expect(server.Count("call_details")).To(Equal(1))
}

// A model that fails mid-call: the agent says its fallback line and hangs
// up, and the call says why.
func TestSIPConversationModelFailureEndsWithTheFallbackLine(t *testing.T) {
	g := NewWithT(t)
	model := llmtest.Demo()
	model.SetFault(llmtest.Status500)
	modelURL := llmtest.Start(t, model)
	addr, asr := speakingCallee(t, map[float64]string{4: "I would like a table"}, []float64{4}, 20*time.Second)
	o := conversationOrg(t, addr, asr, &switchboardv1.Conversation{
		LLM:          &switchboardv1.ConversationLLM{URL: modelURL, Model: "standin-demo", MaxTokens: 250, FirstTokenTimeoutMs: 5000},
		BeginMessage: "Hello {{customer_name}}, this is Chez Ada.", FallbackLine: "Sorry, we will call you back."})
	id := o.CreateCall(t, "+14155550123", nil)
	call := o.WaitLongAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "error_llm"))
	lines := transcriptLines(t, o, id)
	g.Expect(lines).To(ContainSubstring("agent: Hello Ada, this is Chez Ada.\nuser: I would like a table\n"))
	g.Expect(lines).To(ContainSubstring("agent: Sorry, we will call you back.\n"))
	// kubectl describe says why, as a Warning Event on the Call.
	var calls switchboardv1.CallList
	g.Expect(K8s.List(context.Background(), &calls, client.InNamespace(o.Ns))).To(Succeed())
	g.Expect(calls.Items).To(HaveLen(1))
	g.Eventually(func() string {
		return ControlPlane.Kubectl(t).MustRun(t, "describe", "call", "-n", o.Ns, calls.Items[0].Name).Stdout
	}, 10*time.Second, 200*time.Millisecond).Should(MatchRegexp(`Warning\s+ConversationFailed\s+.*error_llm: .*500`))
}

// Retell's published Node demo server (hack/retell-node-demo: its src/ as
// RetellAI/retell-custom-llm-node-demo publishes it, the function-calling
// client behind it) holds the conversation, unmodified: its config and
// begin message after call_details, its ping_pong, its streamed answers
// drafted by the OpenAI library (pointed by OPENAI_BASE_URL at the
// stand-in model), and its end_call function's last line, which hangs up.
func TestSIPConversationWithRetellsNodeDemo(t *testing.T) {
	g := NewWithT(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (Retell's demo needs Node.js 18 or later): %v", err)
	}
	dir := filepath.Join(RepoRoot, "hack", "retell-node-demo")
	tsNode := filepath.Join(dir, "node_modules", "ts-node", "dist", "bin.js")
	if _, err := os.Stat(tsNode); err != nil {
		t.Fatalf("hack/retell-node-demo/node_modules is missing: run `npm ci --prefix hack/retell-node-demo` (make test does it): %v", err)
	}
	model := llmtest.Demo()
	port := freePort(t)
	cmd := exec.Command(node, tsNode, "--transpile-only", "launch.ts", strconv.Itoa(port))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OPENAI_APIKEY=sk-test", "OPENAI_BASE_URL="+llmtest.Start(t, model))
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("Retell's demo said:\n%s", out.String())
		}
	})
	g.Eventually(out.String, 60*time.Second, 100*time.Millisecond).Should(ContainSubstring("Listening on"))

	addr, asr := speakingCallee(t, map[float64]string{6: "I would like a table", 12.5: "four people", 19: "seven pm"},
		[]float64{6, 12.5, 19}, 34*time.Second)
	o := conversationOrg(t, addr, asr, &switchboardv1.Conversation{
		LLMWebSocket: &switchboardv1.ConversationWebSocket{URL: fmt.Sprintf("ws://127.0.0.1:%d/llm-websocket", port),
			ConnectTimeoutSeconds: 5}})
	id := o.CreateCall(t, "+14155550123", nil)
	call := o.WaitLongAnalyzed(t, id)
	lines := transcriptLines(t, o, id)
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"), "transcript:\n%s", lines)
	for _, want := range []string{
		"agent: Hey there, I'm your personal AI therapist, how can I help you",
		"user: I would like a table",
		"agent: Lovely. For how many people should I book the table?",
		"user: four people",
		"user: seven pm",
		"We look forward to seeing you. Goodbye!",
	} {
		g.Expect(lines).To(ContainSubstring(want), "transcript:\n%s", lines)
	}
	g.Expect(out.String()).To(ContainSubstring("call details:"), "the demo asked for and got call_details")
	reqs := model.Requests()
	g.Expect(reqs).NotTo(BeEmpty())
	g.Expect(reqs[0].Model).To(Equal("gpt-4-turbo-preview"), "the demo's own request reached the stand-in")
}

// freePort is a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// syncBuffer is a strings.Builder a process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
