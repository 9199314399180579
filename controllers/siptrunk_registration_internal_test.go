package controllers

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/registration"
)

// A registrar whose TLS connection fails says so in Registered with the
// reasons Ready uses for the trunk's TLS, not as an unreachable registrar.
func TestRegisteredConditionTLS(t *testing.T) {
	for _, tc := range []struct {
		kind, reason string
	}{
		{engine.TLSCertificateInvalid, switchboardv1.ReasonCertificateInvalid},
		{engine.TLSHandshakeFailed, switchboardv1.ReasonTLSHandshakeFailed},
	} {
		tlsErr := &engine.TLSError{Kind: tc.kind, Err: errors.New("x509: certificate signed by unknown authority")}
		state := registration.State{Answered: true, Last: engine.RegisterResult{Err: tlsErr, TLS: tlsErr}}
		status, reason, msg := registeredCondition(state)
		if status != metav1.ConditionFalse || reason != tc.reason || msg != tlsErr.Error() {
			t.Errorf("%s: got %s %s %q, want False %s with the TLS error's words", tc.kind, status, reason, msg, tc.reason)
		}
	}
}
