package apptest

import (
	"bytes"
	"context"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func WaitEvents(b *testing.B, rc *Receiver, n int) {
	deadline := time.Now().Add(5 * time.Minute)
	for len(rc.Deliveries()) < n {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d events arrived", len(rc.Deliveries()), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func WaitNoCalls(b *testing.B, ns string) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var list switchboardv1.CallList
		if err := K8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil && !apierrors.IsNotFound(err) {
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

// ApiserverWrites reads apiserver_request_total for the write verbs, by
// verb, resource and subresource.
func ApiserverWrites(b *testing.B) map[string]float64 { return ApiserverRequests(b, false) }

// ApiserverRequests reads apiserver_request_total by verb, resource and
// subresource: every verb, or (reads false) the write verbs only.
func ApiserverRequests(b *testing.B, reads bool) map[string]float64 {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(ApiserverMetrics(b)))
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

type WriteLine struct {
	Key string
	N   float64
}

func WritesBetween(before, after map[string]float64) (float64, []WriteLine) {
	var total float64
	var lines []WriteLine
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			total += d
			lines = append(lines, WriteLine{k, d})
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].N > lines[j].N })
	return total, lines
}
