package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/conversation/engines"
	"github.com/switchboard-dev/switchboard/internal/conversation/llmtest"
	"github.com/switchboard-dev/switchboard/internal/conversation/retell/retelltest"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// enginesCarrier reads the agents' conversations as the operator does
// (engines.Source), with quick turn-taking.
func enginesCarrier() *Carrier {
	c := New(Timings{Ring: 10 * time.Millisecond})
	src := engines.Source{Policy: egress.URLPolicy{AllowInsecure: true}}
	c.EnableConversations(func(ctx context.Context, req telephony.Request) (conversation.Opener, conversation.Config, conversation.CallDetails, error) {
		open, _, details, err := src.For(ctx, req)
		return open, quickTurns(), details, err
	})
	c.convs.timing = quickLine()
	return c
}

// transferConversation offers transfer_call to dest with opts.
func transferConversation(url, dest string, opts switchboardv1.TransferOptions) *switchboardv1.Conversation {
	return &switchboardv1.Conversation{LLM: &switchboardv1.ConversationLLM{URL: url, Model: "standin"},
		BeginMessage: "Hello, this is the clinic.",
		Tools:        &switchboardv1.ConversationTools{BuiltIn: []string{switchboardv1.ToolEndCall, switchboardv1.ToolTransferCall}},
		Transfer: &switchboardv1.ConversationTransfer{TransferOptions: opts,
			Destinations: []switchboardv1.TransferDestination{{Number: dest, Description: "the front desk"}}}}
}

// transferModel asks to transfer at the callee's first line, and says
// goodbye (end_call) when the transfer failed.
func transferModel(dest string) *llmtest.Server {
	return llmtest.New(llmtest.Turn{Say: "Let me connect you to the front desk. ", Rounds: [][]llmtest.ToolCall{
		llmtest.Call("transfer_call", `{"number":"`+dest+`","summary":"The caller wants the front desk."}`),
		llmtest.Call("end_call", `{"message":"Sorry, nobody is free. Goodbye."}`),
	}})
}

func runTransferCall(t *testing.T, dest string, opts switchboardv1.TransferOptions) (*llmtest.Server, telephony.Progress, []telephony.Turn, *Carrier, telephony.Request) {
	t.Helper()
	llm := transferModel(dest)
	c := enginesCarrier()
	req := reservation("+14155551234", transferConversation(llmtest.Start(t, llm), dest, opts))
	req.Agent.Spec.TransferDestinations = []string{"+1415555*"}
	t.Cleanup(func() { c.Release(context.Background(), req) })
	p := untilEnded(t, c, req, time.Now())
	turns, err := c.Transcript(context.Background(), req, p)
	if err != nil {
		t.Fatal(err)
	}
	return llm, p, turns, c, req
}

func TestSimConversationTransferBridged(t *testing.T) {
	_, p, turns, c, req := runTransferCall(t, "+14155550100", switchboardv1.TransferOptions{Method: switchboardv1.TransferByBridge})
	got := texts(turns)
	x := p.Transfer
	if p.DisconnectionReason != "transfer_bridged" || x == nil || x.Result != switchboardv1.TransferBridged ||
		x.Method != switchboardv1.TransferByBridge || x.SecondLeg <= 0 || x.ConnectedAt.Before(x.RequestedAt) {
		t.Fatalf("progress %+v, transfer %+v", p, x)
	}
	hold := strings.Index(got, "agent: Please hold while I connect you.")
	person := strings.Index(got, `(the person at +14155550100: "Hello, this is +14155550100.`)
	result := strings.Index(got, "(transfer_call answered: Transferred to +14155550100 (bridged).)")
	if hold < 0 || person < hold || result < person || !strings.Contains(got, "Let me connect you to the front desk.") {
		t.Fatalf("transcript:\n%s", got)
	}
	pcm := recordingPCM(t, c, req, p)
	for _, tr := range turns {
		if personTurn(tr) {
			if hz := pitchAt(pcm, tr.Start, tr.End); tr.End <= tr.Start || hz < personHz-30 || hz > personHz+30 {
				t.Errorf("the person's line %v-%v is at %.0f Hz, want %.0f", tr.Start, tr.End, hz, personHz)
			}
		}
	}
}

func TestSimConversationTransferReferTransferred(t *testing.T) {
	_, p, turns, _, _ := runTransferCall(t, "+14155550100", switchboardv1.TransferOptions{})
	if p.DisconnectionReason != "call_transfer" || p.Transfer == nil || p.Transfer.Result != switchboardv1.TransferTransferred ||
		p.Transfer.SecondLeg != 0 || strings.Contains(texts(turns), "Please hold") {
		t.Fatalf("progress %+v, transfer %+v, transcript:\n%s", p, p.Transfer, texts(turns))
	}
}

func TestSimConversationTransferBusyGivesTheCallBack(t *testing.T) {
	llm, p, turns, _, _ := runTransferCall(t, "+14155550001", switchboardv1.TransferOptions{})
	got := texts(turns)
	if p.DisconnectionReason != "agent_hangup" || p.Transfer == nil || p.Transfer.Result != switchboardv1.TransferBusy ||
		!strings.Contains(got, "failed (busy)") || !strings.HasSuffix(got, "agent: Sorry, nobody is free. Goodbye.\n") {
		t.Fatalf("progress %+v, transfer %+v, transcript:\n%s", p, p.Transfer, got)
	}
	reqs := llm.Requests()
	var told bool
	for _, m := range reqs[len(reqs)-1].Messages {
		told = told || m.Role == "tool" && strings.Contains(m.Content, "failed (busy)") && strings.Contains(m.Content, "486")
	}
	if !told {
		t.Fatalf("the model's last request %+v lacks the failed transfer's result", reqs[len(reqs)-1].Messages)
	}
}

func TestSimConversationTransferNotAllowed(t *testing.T) {
	_, p, turns, _, _ := runTransferCall(t, "+14165550100", switchboardv1.TransferOptions{Method: switchboardv1.TransferByBridge})
	got := texts(turns)
	if p.Transfer == nil || p.Transfer.Result != switchboardv1.TransferNotAllowed || strings.Contains(got, "Please hold") ||
		!strings.Contains(got, "not one of the agent's transfer destinations") || p.DisconnectionReason != "agent_hangup" {
		t.Fatalf("progress %+v, transfer %+v, transcript:\n%s", p, p.Transfer, got)
	}
}

// A Retell server's transfer_number to a number nobody answers: the next
// response_required, sent at once, carries the failure's note.
func TestSimConversationRetellTransferNumberFails(t *testing.T) {
	srv := retelltest.New(t, retelltest.Options{Order: retelltest.OrderPython, Begin: "Hello, this is the clinic.",
		Answer: func(r retelltest.Received) []retelltest.Event {
			if r.InteractionType != "response_required" || r.ResponseID == nil {
				return nil
			}
			if *r.ResponseID == 1 {
				return []retelltest.Event{retelltest.Chunk(1, "Transferring you.", true).With("transfer_number", "+14155550002")}
			}
			return []retelltest.Event{retelltest.Chunk(*r.ResponseID, "Nobody answered. Goodbye.", true).With("end_call", true)}
		}})
	c := enginesCarrier()
	req := reservation("+14155551234", &switchboardv1.Conversation{LLMWebSocket: &switchboardv1.ConversationWebSocket{URL: srv.URL},
		Transfer: &switchboardv1.ConversationTransfer{TransferOptions: switchboardv1.TransferOptions{RingTimeoutSeconds: 20}}})
	req.Agent.Spec.TransferDestinations = []string{"+14155550002"}
	t.Cleanup(func() { c.Release(context.Background(), req) })
	p := untilEnded(t, c, req, time.Now())
	if p.DisconnectionReason != "agent_hangup" || p.Transfer == nil || p.Transfer.Result != switchboardv1.TransferNoAnswer ||
		p.Transfer.Detail != "nobody answered within 20s" {
		t.Fatalf("progress %+v, transfer %+v", p, p.Transfer)
	}
	var told bool
	for _, r := range srv.Received() {
		if r.InteractionType != "response_required" || r.ResponseID == nil || *r.ResponseID != 2 {
			continue
		}
		last := r.Transcript[len(r.Transcript)-1]
		told = last.Role == "agent" && strings.Contains(last.Content, "failed (no_answer): nobody answered within 20s")
	}
	if !told {
		t.Fatalf("the server was not told the transfer failed: %+v", srv.Received())
	}
}

// A warm transfer the person declines (0004): the whisper carries the
// model's summary, and the model has the call back.
func TestSimConversationWarmTransferDeclined(t *testing.T) {
	_, p, turns, _, _ := runTransferCall(t, "+14155550004", switchboardv1.TransferOptions{Mode: switchboardv1.TransferWarm,
		Whisper: "A caller for you: {{summary}} Press 1."})
	got := texts(turns)
	if p.Transfer == nil || p.Transfer.Result != switchboardv1.TransferDeclined || p.Transfer.Method != switchboardv1.TransferByBridge ||
		!strings.Contains(got, "(whispered to +14155550004: A caller for you: The caller wants the front desk. Press 1.)") ||
		!strings.Contains(got, "failed (declined)") || p.DisconnectionReason != "agent_hangup" {
		t.Fatalf("progress %+v, transfer %+v, transcript:\n%s", p, p.Transfer, got)
	}
}
