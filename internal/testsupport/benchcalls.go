package testsupport

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// BenchCount is how many calls a benchmark stores: the number in the
// environment variable env, else n.
func BenchCount(b *testing.B, env string, n int) int {
	b.Helper()
	v := os.Getenv(env)
	if v == "" {
		return n
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 100 {
		b.Fatalf("%s=%q: want a number of calls, at least 100", env, v)
	}
	return n
}

var benchBase = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// BenchCallID is the call id of BenchCall(ns, i).
func BenchCallID(i int) string {
	return fmt.Sprintf("call_%08x%024x", i, uint64(i)*0x9e3779b97f4a7c15) //nolint:gosec // i is a small non-negative index; the product may wrap, as a hash does
}

// BenchNumber is the number BenchCall(ns, i) called: one of 50,000.
func BenchNumber(i int) string { return fmt.Sprintf("+1415%07d", i%50_000) }

// BenchCall is the i-th archived call of ns in the benchmarks: four a
// second from 2025-01-01, of twenty agents, mostly answered and analyzed,
// every twentieth failed.
func BenchCall(ns string, i int) *switchboardv1.Call {
	at := benchBase.Add(time.Duration(i) * 250 * time.Millisecond)
	id := BenchCallID(i)
	c := &switchboardv1.Call{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "call-" + id[5:], ResourceVersion: strconv.Itoa(i + 1),
			CreationTimestamp: metav1.NewTime(at.Truncate(time.Second)),
			Annotations:       map[string]string{switchboardv1.AcceptedAtAnnotation: at.Format(time.RFC3339Nano)},
		},
		Spec: switchboardv1.CallSpec{
			AgentID:   fmt.Sprintf("00000000-0000-4000-8000-%012d", i%20),
			ToNumber:  BenchNumber(i),
			Source:    switchboardv1.SourceAPI,
			Variables: &apiextensionsv1.JSON{Raw: []byte(`{"name":"Ada Lovelace","balance":120.5,"plan":"gold"}`)},
			Metadata:  &apiextensionsv1.JSON{Raw: []byte(`{"crm_id":"c-` + strconv.Itoa(i) + `","campaign":"renewals"}`)},
		},
		Status: switchboardv1.CallStatus{CallID: id, Phase: switchboardv1.CallEnded, Disposition: switchboardv1.DispositionAnswered},
	}
	if i%20 == 0 {
		c.Status.Phase, c.Status.Disposition = switchboardv1.CallFailed, switchboardv1.DispositionCarrierFailure
		return c
	}
	ended := metav1.NewMicroTime(at.Add(90 * time.Second))
	duration := int64(85_000)
	c.Status.EndedAt, c.Status.Duration, c.Status.DurationMS = &ended, "1m25s", &duration
	c.Status.Analysis = &switchboardv1.CallAnalysis{
		Summary:       "The customer confirmed the renewal of the gold plan and asked for an invoice by email.",
		ExtractedData: []switchboardv1.ExtractedValue{{Name: "renewed", Value: &apiextensionsv1.JSON{Raw: []byte(`true`)}}},
	}
	return c
}
