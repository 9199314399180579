package sip

import (
	"reflect"
	"testing"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
)

// The agent's headers and the call's become the INVITE's, the call's
// winning on a clash whatever the case of its name, in name order.
func TestRenderMergesSIPHeaders(t *testing.T) {
	agent := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{Script: []switchboardv1.ScriptStep{{Say: "Hello."}},
		SIPHeaders: map[string]switchboardv1.SIPHeaderValue{"X-Tenant": "acme", "X-Region": "eu", "x-account": "agent-default"}}}
	spec, err := (&ScriptRenderer{Speaker: lengthSpeaker{}}).Render(t.Context(), telephony.Request{Agent: agent,
		SIPHeaders: map[string]string{"X-Account": "42", "X-Campaign": "spring", "X-REGION": "us"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.Header{{Name: "X-Account", Value: "42"}, {Name: "X-Campaign", Value: "spring"},
		{Name: "X-REGION", Value: "us"}, {Name: "X-Tenant", Value: "acme"}}
	if !reflect.DeepEqual(spec.Headers, want) {
		t.Errorf("headers %+v, want %+v", spec.Headers, want)
	}

	spec, err = (&ScriptRenderer{Speaker: lengthSpeaker{}}).Render(t.Context(), telephony.Request{
		Agent: &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{Script: []switchboardv1.ScriptStep{{Say: "Hello."}}}}})
	if err != nil || spec.Headers != nil {
		t.Errorf("no headers anywhere: headers %+v, error %v; want none", spec.Headers, err)
	}
}

// The call's headers reach the request from its spec.
func TestBuildRequestCarriesSIPHeaders(t *testing.T) {
	call := &switchboardv1.Call{Spec: switchboardv1.CallSpec{ToNumber: "+14155550123",
		SIPHeaders: map[string]switchboardv1.SIPHeaderValue{"X-Account": "42"}}}
	req := telephony.BuildRequest(call, "+14155550100", nil, nil)
	if !reflect.DeepEqual(req.SIPHeaders, map[string]string{"X-Account": "42"}) {
		t.Errorf("request headers %v, want X-Account: 42", req.SIPHeaders)
	}
}

// A pressDigits step keys its digits after its delay, a second unless it
// says otherwise.
func TestRenderPressDigits(t *testing.T) {
	quick := int32(250)
	agent := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{Script: []switchboardv1.ScriptStep{
		{PressDigits: &switchboardv1.PressDigitsStep{Digits: "1w2#"}},
		{ID: "ext", PressDigits: &switchboardv1.PressDigitsStep{Digits: "204", DelayMs: &quick}},
	}}}
	spec, err := (&ScriptRenderer{Speaker: lengthSpeaker{}}).Render(t.Context(), telephony.Request{Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.Step{{Press: &engine.PressDigits{Digits: "1w2#", Delay: time.Second}},
		{ID: "ext", Press: &engine.PressDigits{Digits: "204", Delay: 250 * time.Millisecond}}}
	if !reflect.DeepEqual(spec.Script, want) {
		t.Errorf("steps %+v, want %+v", spec.Script, want)
	}
}

// The trunk's dtmf reaches the engine.
func TestResolveTrunkDTMF(t *testing.T) {
	tr, err := Resolve(t.Context(), nil, &switchboardv1.SIPTrunk{Spec: switchboardv1.SIPTrunkSpec{
		Address: "sip:127.0.0.1:5060", Transport: switchboardv1.SIPTransportUDP, DTMF: "info"}})
	if err != nil || tr.DTMF != "info" {
		t.Errorf("trunk %+v, error %v: want dtmf info", tr, err)
	}
}
