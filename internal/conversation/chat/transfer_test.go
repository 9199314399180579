package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/conversation/llmtest"
)

func transferConfig(url string) Config {
	cfg := config(url)
	cfg.BuiltIn = append(cfg.BuiltIn, toolTransferCall)
	cfg.Transfer = []Destination{{Number: "+14155550100", Description: "billing questions"},
		{Number: "+14155550199", Description: "the manager, for complaints"}}
	return cfg
}

func TestTransferCallOffersTheDestinations(t *testing.T) {
	llm := llmtest.New(llmtest.Turn{Say: "Hi."})
	s := open(t, transferConfig(llmtest.Start(t, llm)))
	s.Request(respond(1, user("Hello.")))
	chunksOf(t, s, 1)
	var tool *llmtest.Tool
	for i, x := range llm.Requests()[0].Tools {
		if x.Function.Name == "transfer_call" {
			tool = &llm.Requests()[0].Tools[i]
		}
	}
	if tool == nil {
		t.Fatal("transfer_call was not offered")
	}
	var params struct {
		Required   []string `json:"required"`
		Properties struct {
			Number struct {
				Enum []string `json:"enum"`
			} `json:"number"`
			Summary struct {
				Type string `json:"type"`
			} `json:"summary"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tool.Function.Parameters, &params); err != nil {
		t.Fatal(err)
	}
	if strings.Join(params.Properties.Number.Enum, " ") != "+14155550100 +14155550199" || params.Properties.Summary.Type != "string" {
		t.Errorf("parameters %s", tool.Function.Parameters)
	}
	if d := tool.Function.Description; !strings.Contains(d, "+14155550100: billing questions") || !strings.Contains(d, "+14155550199: the manager") {
		t.Errorf("description %q does not describe the destinations", d)
	}
}

func TestTransferCallEndsTheResponseAndTheFailureReachesTheModel(t *testing.T) {
	llm := llmtest.New(
		llmtest.Turn{When: "bill", Say: "Let me connect you. ", Rounds: [][]llmtest.ToolCall{
			llmtest.Call("transfer_call", `{"number":"+14155550100","summary":"Ada has a billing question."}`)}},
		llmtest.Turn{When: "okay", Say: "Sorry about that."},
	)
	s := open(t, transferConfig(llmtest.Start(t, llm)))
	s.Request(respond(1, user("A question about my bill.")))
	got := chunksOf(t, s, 1)
	last := got[len(got)-1]
	ts := tools(got)
	if said(got) != "Let me connect you. " || last.TransferNumber != "+14155550100" ||
		last.TransferSummary != "Ada has a billing question." || len(ts) != 1 ||
		ts[0].Role != conversation.RoleToolCallInvocation || last.TransferToolCallID != ts[0].ToolCallID {
		t.Fatalf("chunks %+v", got)
	}
	if n := len(llm.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times before the transfer, want once", n)
	}
	// The loop's transfer failed: its result is in the next request.
	no := false
	failure := conversation.Message{Role: conversation.RoleToolCallResult, ToolCallID: ts[0].ToolCallID,
		Content: "The transfer to +14155550100 failed (busy).", Successful: &no}
	s.Request(respond(2, user("A question about my bill."), agent("Let me connect you."), ts[0], failure, user("okay")))
	if got := said(chunksOf(t, s, 2)); got != "Sorry about that." {
		t.Errorf("said %q", got)
	}
	msgs := llm.Requests()[1].Messages
	var toolMsg *llmtest.Message
	for i, m := range msgs {
		if m.Role == "tool" {
			toolMsg = &msgs[i]
		}
	}
	if toolMsg == nil || toolMsg.ToolCallID != ts[0].ToolCallID || !strings.Contains(toolMsg.Content, "failed (busy)") {
		t.Errorf("the model was not told the transfer failed: %+v", msgs)
	}
}

func TestTransferCallWithANumberNotListedIsToldToTheModel(t *testing.T) {
	llm := llmtest.New(llmtest.Turn{Rounds: [][]llmtest.ToolCall{llmtest.Call("transfer_call", `{"number":"+19995550000"}`)},
		Then: "I cannot reach that number."})
	s := open(t, transferConfig(llmtest.Start(t, llm)))
	s.Request(respond(1, user("Put me through to my friend.")))
	got := chunksOf(t, s, 1)
	if last := got[len(got)-1]; last.TransferNumber != "" || said(got) != "I cannot reach that number." {
		t.Errorf("chunks %+v", got)
	}
	if ts := tools(got); len(ts) != 2 || *ts[1].Successful || !strings.Contains(ts[1].Content, "must be one of") {
		t.Errorf("tools %+v", ts)
	}
}
