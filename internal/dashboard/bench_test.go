package dashboard_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// benchCallsEnv sets how many calls BenchmarkPages stores; the default
// makes a quick run, `make bench-dashboard` stores a million.
const benchCallsEnv = "SWITCHBOARD_DASHBOARD_BENCH_CALLS"

var benchBase = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// BenchmarkPages measures the calls page and a call's page of an
// organization with many archived calls, served by a running operator
// (the REST API's process, without reconcilers) and read over HTTP as a
// browser reads them: p50 and p99 of the whole server-side render.
func BenchmarkPages(b *testing.B) {
	n := 20_000
	if v := os.Getenv(benchCallsEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 100 {
			b.Fatalf("%s=%q: want a number of calls, at least 100", benchCallsEnv, v)
		}
	}
	o := newOrg(b)
	start := time.Now()
	for i := range n {
		if err := store.SaveCall(context.Background(), benchCall(o.ns, i)); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("stored %d calls in %s", n, time.Since(start).Round(time.Second))
	c := signInClient(b, o.key)
	rng := rand.New(rand.NewPCG(1, 2))
	pages := []struct {
		name string
		path func() string
	}{
		{"calls-page", func() string { return "/dashboard/calls" }},
		{"calls-page-failed", func() string { return "/dashboard/calls?status=failed" }},
		{"call-page", func() string { return "/dashboard/calls/" + benchCallID(rng.IntN(n)) }},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			testsupport.Measure(b, func() error {
				resp, err := c.http.Get(baseURL + p.path()) //nolint:noctx // benchmark
				if err != nil {
					return err
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("%s: %d", p.name, resp.StatusCode)
				}
				return nil
			})
		})
	}
}

func benchCallID(i int) string { return fmt.Sprintf("call_%08x%024x", i, uint64(i)*0x9e3779b97f4a7c15) }

// benchCall is the i-th call of ns: four a second, mostly answered and
// analyzed, every twentieth failed, as the history store's benchmark
// stores them.
func benchCall(ns string, i int) *switchboardv1.Call {
	at := benchBase.Add(time.Duration(i) * 250 * time.Millisecond)
	id := benchCallID(i)
	c := &switchboardv1.Call{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "call-" + id[5:], ResourceVersion: strconv.Itoa(i + 1),
			CreationTimestamp: metav1.NewTime(at.Truncate(time.Second)),
			Annotations:       map[string]string{switchboardv1.AcceptedAtAnnotation: at.Format(time.RFC3339Nano)},
		},
		Spec: switchboardv1.CallSpec{
			AgentID:   fmt.Sprintf("00000000-0000-4000-8000-%012d", i%20),
			ToNumber:  fmt.Sprintf("+1415%07d", i%50_000),
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
