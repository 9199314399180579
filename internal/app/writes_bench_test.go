package app_test

import (
	"bytes"
	"context"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
)

// BenchmarkCallWrites counts the apiserver writes an answered call costs,
// from the apiserver's own apiserver_request_total: b.N calls placed
// through the REST API with one webhook endpoint subscribed to every
// event, each followed until its three events have arrived and it has
// left the cluster (a short --call-retention). Nothing else writes to the
// apiserver meanwhile (the suite's own operator runs no reconcilers while
// benchmarking). Run it with `make bench-writes`.
func BenchmarkCallWrites(b *testing.B) {
	full, err := startOperator(true, func(o *app.Options) {
		o.SimTimings = benchTimings
		o.Retention.Calls = 100 * time.Millisecond
		o.CallNormalEvents = false // the default outside --dev
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(full.stop)
	o := newOrg(b)
	rc := newReceiver(b, nil)
	applyEndpoint(b, o.ns, rc.url(), nil)
	time.Sleep(time.Second) // the endpoint's own set-up writes (Secret, status) settle
	before := apiserverWrites(b)
	b.ResetTimer()
	for i := range b.N {
		if err := postCallTo(http.DefaultClient, full.baseURL, o, benchNumber(i)); err != nil {
			b.Fatal(err)
		}
	}
	waitEvents(b, rc, 3*b.N)
	waitNoCalls(b, o.ns)
	b.StopTimer()
	after := apiserverWrites(b)
	total, lines := writesBetween(before, after)
	b.ReportMetric(float64(total)/float64(b.N), "writes/call")
	for _, l := range lines {
		b.Logf("%-48s %6.2f per call", l.key, float64(l.n)/float64(b.N))
	}
}

func waitEvents(b *testing.B, rc *receiver, n int) {
	deadline := time.Now().Add(5 * time.Minute)
	for len(rc.deliveries()) < n {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d events arrived", len(rc.deliveries()), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitNoCalls(b *testing.B, ns string) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var list switchboardv1.CallList
		if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil && !apierrors.IsNotFound(err) {
			b.Fatal(err)
		}
		if len(list.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d calls still in the cluster", len(list.Items))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// apiserverWrites reads apiserver_request_total for the write verbs, by
// verb, resource and subresource.
func apiserverWrites(b *testing.B) map[string]float64 { return apiserverRequests(b, false) }

// apiserverRequests reads apiserver_request_total by verb, resource and
// subresource: every verb, or (reads false) the write verbs only.
func apiserverRequests(b *testing.B, reads bool) map[string]float64 {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(apiserverMetrics(b)))
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]float64{}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		switch labels["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		default:
			if !reads {
				continue
			}
		}
		key := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out
}

type writeLine struct {
	key string
	n   float64
}

func writesBetween(before, after map[string]float64) (float64, []writeLine) {
	var total float64
	var lines []writeLine
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			total += d
			lines = append(lines, writeLine{k, d})
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].n > lines[j].n })
	return total, lines
}
