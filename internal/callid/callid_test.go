package callid

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func TestNewIsValidAndRoundTrips(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := New()
		if !Valid(id) || len(id) != len("call_")+32 {
			t.Fatalf("New() = %q, not a 32-hex call id", id)
		}
		if seen[id] {
			t.Fatalf("New() repeated %q", id)
		}
		seen[id] = true
		c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Name: ResourceName(id), UID: "0f0e-11"}}
		if got := Of(c); got != id {
			t.Fatalf("Of(named %q) = %q, want %q", c.Name, got, id)
		}
	}
}

func TestValid(t *testing.T) {
	for id, want := range map[string]bool{
		"call_0123abcd":      true,
		"call_test_00000000": true,
		"call_":              false,
		"CALL_abc":           false,
		"call_ABC":           false,
		"call-abc":           false,
		"abc":                false,
		"call_a b":           false,
		"call_../x":          false,
	} {
		if got := Valid(id); got != want {
			t.Errorf("Valid(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestOf(t *testing.T) {
	tests := []struct {
		name string
		call switchboardv1.Call
		want string
	}{
		{"status wins", switchboardv1.Call{
			ObjectMeta: metav1.ObjectMeta{Name: "call-aa", UID: "u"},
			Status:     switchboardv1.CallStatus{CallID: "call_bb"}}, "call_bb"},
		{"api name", switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Name: "call-0af"}}, "call_0af"},
		{"kubectl name uses uid", switchboardv1.Call{
			ObjectMeta: metav1.ObjectMeta{Name: "smoke-test", UID: "12ab-34cd"}}, "call_12ab34cd"},
		{"non-hex call- name uses uid", switchboardv1.Call{
			ObjectMeta: metav1.ObjectMeta{Name: "call-me-maybe", UID: "99"}}, "call_99"},
		{"nothing known", switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, ""},
	}
	for _, tt := range tests {
		if got := Of(&tt.call); got != tt.want {
			t.Errorf("%s: Of() = %q, want %q", tt.name, got, tt.want)
		}
	}
}
