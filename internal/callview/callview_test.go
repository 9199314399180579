package callview

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func render(t *testing.T, c *switchboardv1.Call) map[string]any {
	t.Helper()
	view, err := Render(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(view)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRenderNewCallHasEveryFieldAndNulls(t *testing.T) {
	c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Name: "call-0abc"},
		Spec: switchboardv1.CallSpec{AgentID: "a", ToNumber: "+14155551234", Source: switchboardv1.SourceAPI}}
	got := render(t, c)
	want := map[string]any{"call_id": "call_0abc", "agent_id": "a", "direction": "outbound", "status": "queued",
		"disposition": nil, "source": "api", "to_number": "+14155551234", "from_number": nil, "started_at": nil,
		"ended_at": nil, "duration_ms": nil, "disconnection_reason": nil, "recording_url": nil,
		"variables": map[string]any{}, "metadata": map[string]any{}, "analysis": nil, "transfer": nil}
	if len(got) != len(want) {
		t.Fatalf("fields = %v, want exactly %v", got, want)
	}
	for k, v := range want {
		if gv, ok := got[k]; !ok || (v == nil) != (gv == nil) {
			t.Errorf("%s = %v, want %v", k, gv, v)
		}
	}
}

func TestRenderRefusedCallIsFailed(t *testing.T) {
	c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Name: "call-0abc",
		Annotations: map[string]string{switchboardv1.RefusalCodeAnnotation: "dnc_blocked"}}}
	if got := render(t, c)["status"]; got != "failed" {
		t.Fatalf("status = %v, want failed", got)
	}
}

func TestRenderEndedCall(t *testing.T) {
	start := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC))
	end := metav1.NewMicroTime(start.Add(5 * time.Second))
	c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Name: "x"},
		Spec: switchboardv1.CallSpec{Metadata: &apiextensionsv1.JSON{Raw: []byte(`{"k":[1,null]}`)}},
		Status: switchboardv1.CallStatus{CallID: "call_1", Phase: switchboardv1.CallEnded, FromNumber: "+14155550100",
			StartedAt: &start, EndedAt: &end, DurationMS: new(int64(4000)),
			Analysis: &switchboardv1.CallAnalysis{Summary: "s", ExtractedData: []switchboardv1.ExtractedValue{
				{Name: "a", Value: &apiextensionsv1.JSON{Raw: []byte(`"x"`)}}, {Name: "b"}}}}}
	got := render(t, c)
	if got["started_at"] != "2026-01-02T03:04:05.123Z" || got["ended_at"] != "2026-01-02T03:04:10.123Z" {
		t.Errorf("timestamps = %v, %v", got["started_at"], got["ended_at"])
	}
	if got["from_number"] != "+14155550100" || got["duration_ms"] != 4000.0 || got["call_id"] != "call_1" {
		t.Errorf("got %v", got)
	}
	data := got["analysis"].(map[string]any)["extracted_data"].(map[string]any)
	if v, ok := data["b"]; !ok || v != nil || data["a"] != "x" || len(data) != 2 {
		t.Errorf("extracted_data = %v, want {a: x, b: null}", data)
	}
	if m := got["metadata"].(map[string]any); len(m["k"].([]any)) != 2 {
		t.Errorf("metadata = %v", m)
	}
}

// A transferred call's object says where it went, how, and how it ended,
// with the times in the API's format; unset parts are null.
func TestRenderTransfer(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	connected := metav1.NewMicroTime(at.Add(4500 * time.Millisecond))
	leg := int64(61000)
	c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Name: "call-0abc"},
		Status: switchboardv1.CallStatus{Phase: switchboardv1.CallEnded, DisconnectionReason: switchboardv1.ReasonTransferBridged,
			Transfer: &switchboardv1.CallTransfer{To: "+14155550100", Mode: switchboardv1.TransferWarm,
				Method: switchboardv1.TransferByBridge, Result: switchboardv1.TransferBridged, SIPStatus: 200,
				RequestedAt: &at, ConnectedAt: &connected, SecondLegMS: &leg}}}
	raw, _ := json.Marshal(render(t, c)["transfer"])
	want := `{"connected_at":"2026-01-02T03:04:09.500Z","detail":null,"method":"bridge","mode":"warm",` +
		`"requested_at":"2026-01-02T03:04:05.000Z","result":"bridged","second_leg_duration_ms":61000,"sip_status":200,"to":"+14155550100"}`
	if string(raw) != want {
		t.Errorf("transfer = %s\nwant       %s", raw, want)
	}
	c.Status.Transfer = &switchboardv1.CallTransfer{To: "+14165550100", Mode: switchboardv1.TransferCold,
		Method: switchboardv1.TransferByRefer, Result: switchboardv1.TransferNotAllowed,
		Detail: "+14165550100 is not one of agent sales's transferDestinations", RequestedAt: &at}
	raw, _ = json.Marshal(render(t, c)["transfer"])
	want = `{"connected_at":null,"detail":"+14165550100 is not one of agent sales's transferDestinations","method":"refer",` +
		`"mode":"cold","requested_at":"2026-01-02T03:04:05.000Z","result":"not_allowed","second_leg_duration_ms":null,"sip_status":null,"to":"+14165550100"}`
	if string(raw) != want {
		t.Errorf("refused transfer = %s\nwant               %s", raw, want)
	}
}
