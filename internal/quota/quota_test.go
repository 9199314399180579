package quota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLimitsOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        Limits
	}{
		{"none: unlimited", nil, Limits{}},
		{"a rate gets a burst of twice it", map[string]string{CreateRateAnnotation: "5"}, Limits{CreateRate: 5, CreateBurst: 10}},
		{"a slow rate bursts one", map[string]string{CreateRateAnnotation: "0.2"}, Limits{CreateRate: 0.2, CreateBurst: 1}},
		{"an explicit burst", map[string]string{CreateRateAnnotation: "5", CreateBurstAnnotation: "3"}, Limits{CreateRate: 5, CreateBurst: 3}},
		{"a burst alone limits nothing", map[string]string{CreateBurstAnnotation: "3"}, Limits{}},
		{"active calls", map[string]string{ActiveCallsAnnotation: "20"}, Limits{ActiveCalls: 20}},
		{"invalid values are ignored", map[string]string{CreateRateAnnotation: "fast", ActiveCallsAnnotation: "-1",
			CreateBurstAnnotation: "x"}, Limits{}},
		{"infinity and zero are no limit", map[string]string{CreateRateAnnotation: "+Inf", ActiveCallsAnnotation: "0"}, Limits{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := limitsOf(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}})
			if got != tc.want {
				t.Errorf("limits = %+v, want %+v", got, tc.want)
			}
		})
	}
}
