package retell_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/conversation/retell"
	"github.com/switchboard-dev/switchboard/internal/conversation/retell/retelltest"
	"github.com/switchboard-dev/switchboard/internal/egress"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const wait = 5 * time.Second

var call = conversation.CallDetails{
	CallID: "call_123", AgentID: "agent_1", From: "+14155550100", To: "+14155550199",
	Variables: map[string]any{"name": "Ada"}, Metadata: []byte(`{"order":"42"}`),
}

func testConfig(url string) retell.Config {
	return retell.Config{URL: url, Policy: egress.URLPolicy{AllowInsecure: true},
		ConnectTimeout: time.Second, PingInterval: 10 * time.Millisecond, PingTimeout: 80 * time.Millisecond}
}

func open(t *testing.T, cfg retell.Config) conversation.Session {
	t.Helper()
	s, err := retell.Open(context.Background(), cfg, call)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// until collects chunks up to the first that done accepts.
func until(t *testing.T, s conversation.Session, done func(conversation.Chunk) bool) []conversation.Chunk {
	t.Helper()
	var got []conversation.Chunk
	timeout := time.After(wait)
	for {
		select {
		case c, ok := <-s.Chunks():
			if !ok {
				t.Fatalf("the session ended (%v) after %+v", s.Err(), got)
			}
			got = append(got, c)
			if done(c) {
				return got
			}
		case <-timeout:
			t.Fatalf("no end of chunks after %+v", got)
		}
	}
}

func complete(id int) func(conversation.Chunk) bool {
	return func(c conversation.Chunk) bool { return c.ResponseID == id && c.Complete && c.Tool == nil }
}

// ended drains the session until it ends and returns its error.
func ended(t *testing.T, s conversation.Session) ([]conversation.Chunk, error) {
	t.Helper()
	var got []conversation.Chunk
	timeout := time.After(wait)
	for {
		select {
		case c, ok := <-s.Chunks():
			if !ok {
				return got, s.Err()
			}
			got = append(got, c)
		case <-timeout:
			t.Fatalf("the session did not end; chunks %+v", got)
		}
	}
}

func reason(err error) string {
	var cerr *conversation.Error
	if errors.As(err, &cerr) {
		return cerr.Reason
	}
	return ""
}

func transcript(user string) []conversation.Message {
	return []conversation.Message{{Role: conversation.RoleAgent, Content: "Hello"}, {Role: conversation.RoleUser, Content: user}}
}

func text(chunks []conversation.Chunk) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString(c.Content)
	}
	return b.String()
}

func types(rs []retelltest.Received) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.InteractionType)
	}
	return out
}

func TestOpeningOrders(t *testing.T) {
	for name, order := range map[string]retelltest.Order{"python": retelltest.OrderPython, "node": retelltest.OrderNode} {
		t.Run(name, func(t *testing.T) {
			srv := retelltest.New(t, retelltest.Options{Order: order, Begin: "Hello",
				Config: retelltest.Config{CallDetails: true}})
			s := open(t, testConfig(srv.URL+"/"))

			begin := until(t, s, complete(0))
			if len(begin) != 1 || begin[0].Content != "Hello" {
				t.Fatalf("begin message = %+v, want one chunk Hello", begin)
			}
			s.Request(conversation.Request{Kind: conversation.Respond, ResponseID: 1, Transcript: transcript("yes")})
			answer := until(t, s, complete(1))
			if got := text(answer); got != "I heard you say: yes" || len(answer) != 4 {
				t.Errorf("answer = %q in %d chunks, want 4 chunks of %q", got, len(answer), "I heard you say: yes")
			}
			if got := srv.Paths(); len(got) != 1 || got[0] != "/llm-websocket/call_123" {
				t.Errorf("dialed %v, want /llm-websocket/call_123", got)
			}
			rs := srv.Received()
			if got := strings.Join(types(rs), ","); got != "call_details,response_required" {
				t.Fatalf("server received %s", got)
			}
			c := rs[0].Call
			want := map[string]any{"call_id": "call_123", "agent_id": "agent_1", "from_number": "+14155550100",
				"to_number": "+14155550199", "direction": "outbound", "call_type": "phone_call", "call_status": "registered"}
			for k, v := range want {
				if c[k] != v {
					t.Errorf("call_details call.%s = %v, want %v", k, c[k], v)
				}
			}
			if m, _ := c["metadata"].(map[string]any); m["order"] != "42" {
				t.Errorf("call_details metadata = %v", c["metadata"])
			}
			if v, _ := c["retell_llm_dynamic_variables"].(map[string]any); v["name"] != "Ada" {
				t.Errorf("call_details variables = %v", c["retell_llm_dynamic_variables"])
			}
		})
	}
}

func TestCallDetailsOnlyWhenAsked(t *testing.T) {
	cases := map[string]retelltest.Options{
		"not asked": {Config: retelltest.Config{CallDetails: false}},
		"no config": {NoConfig: true},
		// The config comes long after the first request: the session works
		// meanwhile, and call_details follows the config.
		"late config": {Config: retelltest.Config{CallDetails: true}, ConfigDelay: 300 * time.Millisecond},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			srv := retelltest.New(t, opts)
			s := open(t, testConfig(srv.URL))
			until(t, s, complete(0))
			s.Request(conversation.Request{Kind: conversation.Respond, ResponseID: 1, Transcript: transcript("hi")})
			until(t, s, complete(1))
			got := types(srv.Received())
			if got[0] != "response_required" {
				t.Fatalf("server received %v, want response_required first", got)
			}
			if name != "late config" {
				if n := srv.Count("call_details"); n != 0 {
					t.Errorf("call_details sent %d times; the server did not ask", n)
				}
				return
			}
			deadline := time.Now().Add(wait)
			for srv.Count("call_details") != 1 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := srv.Count("call_details"); n != 1 {
				t.Errorf("call_details sent %d times after the late config, want 1", n)
			}
		})
	}
}

func TestPingPong(t *testing.T) {
	t.Run("auto_reconnect", func(t *testing.T) {
		srv := retelltest.New(t, retelltest.Options{Config: retelltest.Config{AutoReconnect: true, CallDetails: true}})
		s := open(t, testConfig(srv.URL))
		until(t, s, complete(0))
		deadline := time.Now().Add(wait)
		for srv.Count("ping_pong") < 5 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		rs := srv.Received()
		if rs[0].InteractionType != "call_details" || rs[1].InteractionType != "ping_pong" {
			t.Fatalf("server received %v, want call_details then ping_pong", types(rs[:2]))
		}
		var last int64
		for _, r := range rs[1:] {
			if r.InteractionType != "ping_pong" || r.Timestamp < last || r.Timestamp < time.Now().Add(-time.Minute).UnixMilli() {
				t.Fatalf("unexpected %s (timestamp %d after %d)", r.Raw, r.Timestamp, last)
			}
			last = r.Timestamp
		}
		if len(rs) < 6 {
			t.Fatalf("%d ping_pong, want 5", len(rs)-1)
		}
		if srv.Connections() != 1 {
			t.Errorf("%d connections; a server answering pings is never dropped", srv.Connections())
		}
	})
	t.Run("without auto_reconnect", func(t *testing.T) {
		srv := retelltest.New(t, retelltest.Options{Config: retelltest.Config{CallDetails: true}})
		s := open(t, testConfig(srv.URL))
		until(t, s, complete(0))
		s.Request(conversation.Request{Kind: conversation.Respond, ResponseID: 1, Transcript: transcript("hi")})
		until(t, s, complete(1))
		// Pings would start with the config, before the request.
		if got := strings.Join(types(srv.Received()), ","); got != "call_details,response_required" {
			t.Errorf("server received %s, want no ping_pong", got)
		}
	})
}

func TestReconnectAtMostTwice(t *testing.T) {
	srv := retelltest.New(t, retelltest.Options{Begin: "Hello", Fault: retelltest.NoPong,
		Config: retelltest.Config{AutoReconnect: true, CallDetails: true}})
	s := open(t, testConfig(srv.URL))
	chunks, err := ended(t, s)
	if reason(err) != conversation.ReasonWebSocketLost || !strings.Contains(err.Error(), "no ping_pong") {
		t.Fatalf("Err = %v, want %s over ping_pong", err, conversation.ReasonWebSocketLost)
	}
	if n := srv.Connections(); n != 3 {
		t.Errorf("%d connections, want the first and 2 reconnects", n)
	}
	if n := srv.Count("call_details"); n != 3 {
		t.Errorf("call_details sent %d times, want once per connection (3)", n)
	}
	begins := 0
	for _, c := range chunks {
		if c.ResponseID == 0 {
			begins++
		}
	}
	if begins != 1 {
		t.Errorf("begin message delivered %d times, want once: %+v", begins, chunks)
	}
}

func TestReconnectAsksAgain(t *testing.T) {
	srv := retelltest.New(t, retelltest.Options{Order: retelltest.OrderNode, Begin: "Hello", Fault: retelltest.DropTCP,
		FaultConns: 1, Config: retelltest.Config{AutoReconnect: true, CallDetails: true}})
	s := open(t, testConfig(srv.URL))
	until(t, s, complete(0))
	s.Request(conversation.Request{Kind: conversation.Respond, ResponseID: 1, Transcript: transcript("again")})
	got := until(t, s, complete(1))
	if text(got) != "I heard you say: again" {
		t.Errorf("chunks after the reconnect = %+v, want the answer to request 1 and no second begin message", got)
	}
	if n := srv.Connections(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
	var second []string
	for _, r := range srv.Received() {
		if r.Conn == 2 && r.InteractionType != "ping_pong" {
			second = append(second, r.InteractionType)
		}
	}
	if strings.Join(second, ",") != "call_details,response_required" {
		t.Errorf("second connection received %v, want call_details then the request again", second)
	}
}

func TestCloseCodes(t *testing.T) {
	cases := []struct {
		name   string
		opts   retelltest.Options
		reason string // "" for no error
		detail string
	}{
		{"1000 ends the session", retelltest.Options{Fault: retelltest.Close1000}, "", ""},
		{"1011 is a runtime error", retelltest.Options{Fault: retelltest.Close1011},
			conversation.ReasonWebSocketRuntime, "status 1011 (\"the server failed\")"},
		{"drop without auto_reconnect", retelltest.Options{Fault: retelltest.DropTCP},
			conversation.ReasonWebSocketLost, "dropped"},
		{"binary frame", retelltest.Options{Fault: retelltest.CorruptBinary},
			conversation.ReasonWebSocketCorrupt, "binary"},
		{"not JSON", retelltest.Options{Fault: retelltest.CorruptText},
			conversation.ReasonWebSocketCorrupt, "not valid JSON"},
		{"unknown response_type", retelltest.Options{Answer: func(retelltest.Received) []retelltest.Event {
			return []retelltest.Event{{"response_type": "speak"}}
		}}, conversation.ReasonWebSocketCorrupt, `unknown response_type "speak"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := retelltest.New(t, tc.opts)
			s := open(t, testConfig(srv.URL))
			until(t, s, complete(0))
			s.Request(conversation.Request{Kind: conversation.Respond, ResponseID: 1, Transcript: transcript("hi")})
			_, err := ended(t, s)
			if reason(err) != tc.reason || (err != nil && !strings.Contains(err.Error(), tc.detail)) {
				t.Errorf("Err = %v, want %q with %q", err, tc.reason, tc.detail)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	refused := retelltest.New(t, retelltest.Options{Fault: retelltest.RefuseUpgrade})
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = silent.Close() }()
	cases := []struct {
		name   string
		cfg    retell.Config
		detail string
	}{
		{"refused upgrade", testConfig(refused.URL), "HTTP 403"},
		{"no answer", func() retell.Config {
			c := testConfig("ws://" + silent.Addr().String() + "/llm")
			c.ConnectTimeout = 50 * time.Millisecond
			return c
		}(), "within 50ms"},
		{"ws outside development", retell.Config{URL: refused.URL}, "ws:// is allowed only in development"},
		{"private address", retell.Config{URL: "wss://127.0.0.1/llm"}, "publicly reachable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := retell.Open(context.Background(), tc.cfg, call)
			if s != nil {
				_ = s.Close()
			}
			if reason(err) != conversation.ReasonWebSocketOpen || !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("Open = %v, want %s with %q", err, conversation.ReasonWebSocketOpen, tc.detail)
			}
		})
	}
}

func TestTranscripts(t *testing.T) {
	ok := true
	msgs := []conversation.Message{
		{Role: conversation.RoleAgent, Content: "Hello"},
		{Role: conversation.RoleUser, Content: "what's my balance"},
		{Role: conversation.RoleToolCallInvocation, ToolCallID: "t1", Name: "balance", Arguments: `{"id":1}`},
		{Role: conversation.RoleToolCallResult, ToolCallID: "t1", Content: "12", Successful: &ok},
		{Role: conversation.RoleAgent, Content: "It is 12."},
	}
	for _, withTools := range []bool{true, false} {
		srv := retelltest.New(t, retelltest.Options{Config: retelltest.Config{TranscriptWithToolCalls: withTools}})
		s := open(t, testConfig(srv.URL))
		until(t, s, complete(0))
		s.Update(msgs[:2], "agent_turn")
		s.Request(conversation.Request{Kind: conversation.Remind, ResponseID: 3, Transcript: msgs})
		until(t, s, complete(3))
		// The update went first, or the request superseded it in the queue.
		rs := srv.Received()
		if rs[0].InteractionType == "update_only" {
			rs = rs[1:]
		}
		if len(rs) != 1 || rs[0].InteractionType != "reminder_required" || *rs[0].ResponseID != 3 {
			t.Fatalf("server received %v, want the reminder", types(srv.Received()))
		}
		if got := rs[0].Transcript; len(got) != 3 || got[1].Role != "user" || got[1].Content != "what's my balance" || got[2].Role != "agent" {
			t.Errorf("transcript = %+v, want the agent's and the user's 3 utterances", got)
		}
		if got := rs[0].TranscriptWithToolCalls; withTools != (len(got) == 5) || (withTools && (got[2]["name"] != "balance" || got[3]["successful"] != true)) {
			t.Errorf("transcript_with_tool_calls = %v (asked: %v)", got, withTools)
		}
		s.Update(msgs, "user_turn")
		deadline := time.Now().Add(wait)
		for rs := srv.Received(); rs[len(rs)-1].InteractionType != "update_only" && time.Now().Before(deadline); rs = srv.Received() {
			time.Sleep(5 * time.Millisecond)
		}
		rs = srv.Received()
		if u := rs[len(rs)-1]; u.InteractionType != "update_only" || u.TurnTaking != "user_turn" || len(u.Transcript) != 3 || u.ResponseID != nil {
			t.Errorf("update = %s", u.Raw)
		}
		_ = s.Close()
	}
}

func TestServerEvents(t *testing.T) {
	srv := retelltest.New(t, retelltest.Options{Answer: func(r retelltest.Received) []retelltest.Event {
		id := *r.ResponseID
		return []retelltest.Event{
			retelltest.Chunk(id, "One moment.", false),
			retelltest.ToolInvocation("t1", "lookup", `{"q":"x"}`),
			{"response_type": "metadata", "metadata": map[string]any{"k": "v"}},
			retelltest.ToolResult("t1", "found", true),
			retelltest.Chunk(id, "Press one.", true).With("digit_to_press", "1").With("end_call", true).
				With("no_interruption_allowed", true).With("transfer_number", "+14155550123"),
		}
	}})
	s := open(t, testConfig(srv.URL))
	until(t, s, complete(0))
	s.Request(conversation.Request{Kind: conversation.Respond, ResponseID: 1, Transcript: transcript("hi")})
	got := until(t, s, complete(1))
	if len(got) != 4 || got[1].Tool == nil || got[2].Tool == nil {
		t.Fatalf("chunks = %+v, want content, two tool calls, content", got)
	}
	if inv := got[1].Tool; inv.Role != conversation.RoleToolCallInvocation || inv.Name != "lookup" || inv.Arguments != `{"q":"x"}` || got[1].ResponseID != 1 {
		t.Errorf("invocation = %+v (response %d)", inv, got[1].ResponseID)
	}
	if res := got[2].Tool; res.Role != conversation.RoleToolCallResult || res.Content != "found" || res.Successful == nil || !*res.Successful {
		t.Errorf("result = %+v", res)
	}
	if last := got[3]; last.Digits != "1" || !last.EndCall || !last.NoInterruption || last.TransferNumber != "+14155550123" {
		t.Errorf("last chunk = %+v, want digit 1, end_call, no interruption, a transfer number", last)
	}

	// Two update_agent events before the loop looks: it gets them merged.
	ctx := context.Background()
	for _, e := range []retelltest.Event{
		retelltest.UpdateAgent(map[string]any{"reminder_trigger_ms": 4000, "interruption_sensitivity": 0.9}),
		retelltest.UpdateAgent(map[string]any{"reminder_max_count": 0, "interruption_sensitivity": 0.5, "responsiveness": 1}),
		retelltest.Interrupt(7, "Sorry to cut in.", true),
	} {
		if err := srv.Send(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if c := until(t, s, func(conversation.Chunk) bool { return true })[0]; c.InterruptID != 7 || c.Content != "Sorry to cut in." || !c.Complete || !c.NoInterruption {
		t.Errorf("interrupt = %+v", c)
	}
	select {
	case st := <-s.Settings():
		if st.ReminderAfterMs == nil || *st.ReminderAfterMs != 4000 || st.ReminderMaxCount == nil || *st.ReminderMaxCount != 0 ||
			st.InterruptionSensitivity == nil || *st.InterruptionSensitivity != 0.5 {
			t.Errorf("settings = %+v", st)
		}
	default:
		t.Fatal("no settings")
	}
}

func TestReconnectEndsHalfStreamedResponse(t *testing.T) {
	srv := retelltest.New(t, retelltest.Options{Config: retelltest.Config{AutoReconnect: true},
		Answer: func(r retelltest.Received) []retelltest.Event {
			if r.Conn == 1 {
				return []retelltest.Event{retelltest.Chunk(*r.ResponseID, "Let me see", false)}
			}
			return retelltest.DefaultAnswer(r)
		}})
	s := open(t, testConfig(srv.URL))
	until(t, s, complete(0))
	s.Request(conversation.Request{Kind: conversation.Respond, ResponseID: 1, Transcript: transcript("hi")})
	until(t, s, func(c conversation.Chunk) bool { return c.Content == "Let me see" })
	srv.Drop()
	if got := until(t, s, func(conversation.Chunk) bool { return true }); got[0] != (conversation.Chunk{ResponseID: 1, Complete: true}) {
		t.Errorf("after the drop: %+v, want response 1 completed where it stopped", got)
	}
	s.Request(conversation.Request{Kind: conversation.Respond, ResponseID: 2, Transcript: transcript("hello?")})
	until(t, s, complete(2))
	var asked []int
	for _, r := range srv.Received() {
		if r.InteractionType == "response_required" {
			asked = append(asked, *r.ResponseID)
		}
	}
	if len(asked) != 2 || asked[0] != 1 || asked[1] != 2 {
		t.Errorf("requests received %v, want 1 then 2 (a started response is not asked again)", asked)
	}
}

func TestReadLimit(t *testing.T) {
	srv := retelltest.New(t, retelltest.Options{Answer: func(r retelltest.Received) []retelltest.Event {
		return []retelltest.Event{retelltest.Chunk(*r.ResponseID, strings.Repeat("a", 2000), true)}
	}})
	cfg := testConfig(srv.URL)
	cfg.ReadLimit = 1024
	s := open(t, cfg)
	until(t, s, complete(0))
	s.Request(conversation.Request{Kind: conversation.Respond, ResponseID: 1, Transcript: transcript("hi")})
	if _, err := ended(t, s); reason(err) != conversation.ReasonWebSocketCorrupt || !strings.Contains(err.Error(), "1024-byte") {
		t.Errorf("Err = %v, want %s over the limit", err, conversation.ReasonWebSocketCorrupt)
	}
}

func TestStaleResponseIDPassedThrough(t *testing.T) {
	srv := retelltest.New(t, retelltest.Options{Fault: retelltest.StaleAnswer})
	s := open(t, testConfig(srv.URL))
	until(t, s, complete(0))
	s.Request(conversation.Request{Kind: conversation.Respond, ResponseID: 2, Transcript: transcript("hi")})
	got := until(t, s, complete(2))
	if got[0].ResponseID != 1 || got[0].Content != "stale" || text(got[1:]) != "I heard you say: hi" {
		t.Errorf("chunks = %+v, want the stale chunk with its id 1, then response 2", got)
	}
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	srv := retelltest.New(t, retelltest.Options{Config: retelltest.Config{AutoReconnect: true, CallDetails: true}})
	before := goleak.IgnoreCurrent()
	s, err := retell.Open(context.Background(), testConfig(srv.URL), call)
	if err != nil {
		t.Fatal(err)
	}
	until(t, s, complete(0))
	s.Request(conversation.Request{Kind: conversation.Respond, ResponseID: 1, Transcript: transcript("hi")})
	// The loop does not read: the reader waits on the full buffer.
	for i := 0; i < 100; i++ {
		_ = srv.Send(context.Background(), retelltest.Chunk(1, "x", false))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Err(); err != nil {
		t.Errorf("Err after Close = %v, want nil", err)
	}
	for range s.Chunks() {
	}
	goleak.VerifyNone(t, before)
	if got := srv.Closes(); len(got) != 1 || got[0] != websocket.StatusNormalClosure {
		t.Errorf("the server saw closes %v, want 1000", got)
	}
}

func TestSlowLoopIsNotALostServer(t *testing.T) {
	srv := retelltest.New(t, retelltest.Options{Config: retelltest.Config{AutoReconnect: true}})
	s := open(t, testConfig(srv.URL))
	until(t, s, complete(0))
	ctx := context.Background()
	for i := 0; i < 100; i++ { // more than Chunks holds: the reader waits
		if err := srv.Send(ctx, retelltest.Chunk(1, "x", false)); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Send(ctx, retelltest.Chunk(1, "", true)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * testConfig("").PingTimeout) // the loop is busy; the server's pongs wait in the socket
	if got := until(t, s, complete(1)); len(got) != 101 {
		t.Errorf("%d chunks, want 101", len(got))
	}
	if n := srv.Connections(); n != 1 {
		t.Errorf("%d connections; back-pressure from the loop must not look like a lost server", n)
	}
}
