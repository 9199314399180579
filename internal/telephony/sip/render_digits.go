package sip

import (
	"slices"
	"strings"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
)

// defaultPressDelay is a pressDigits step's wait before its first key when
// delayMs is unset (the CRD's default, for Agents stored before it).
const defaultPressDelay = time.Second

// pressDigits renders a pressDigits step: its keys, after its delay.
func pressDigits(p *switchboardv1.PressDigitsStep) engine.Step {
	delay := defaultPressDelay
	if p.DelayMs != nil {
		delay = time.Duration(*p.DelayMs) * time.Millisecond
	}
	return engine.Step{Press: &engine.PressDigits{Digits: p.Digits, Delay: delay}}
}

// sipHeaders merges the agent's custom headers with the call's, the
// call's winning on a clash (SIP header names are case-insensitive),
// sorted by name so that the wire order is the same on every call.
func sipHeaders(agent map[string]switchboardv1.SIPHeaderValue, call map[string]string) []engine.Header {
	byName := make(map[string]engine.Header, len(agent)+len(call))
	for name, value := range agent {
		byName[strings.ToLower(name)] = engine.Header{Name: name, Value: string(value)}
	}
	for name, value := range call {
		byName[strings.ToLower(name)] = engine.Header{Name: name, Value: value}
	}
	if len(byName) == 0 {
		return nil
	}
	out := make([]engine.Header, 0, len(byName))
	for _, h := range byName {
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b engine.Header) int {
		return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
	})
	return out
}
