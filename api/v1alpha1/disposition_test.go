package v1alpha1

import "testing"

// Every call that ended without connecting has a disconnection reason, the
// same whichever carrier placed it; a connected call's reason says who hung
// up, so the table has none for it.
func TestUnconnectedReason(t *testing.T) {
	for _, d := range []Disposition{DispositionAnswered, DispositionAnsweringMachine, DispositionNoAnswer, DispositionBusy,
		DispositionRejected, DispositionUnreachable, DispositionInvalidNumber, DispositionCarrierFailure} {
		if got := d.UnconnectedReason(); (got == "") != d.Connected() {
			t.Errorf("%s: reason %q, connected %v", d, got, d.Connected())
		}
	}
}
