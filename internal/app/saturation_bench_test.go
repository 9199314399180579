package app_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// apiserverCallCreates is the apiserver's own histogram of its Call
// creates (apiserver_request_duration_seconds, POST calls): the time
// between the request's arrival and its answer, which the operator's
// POST /v1/calls waits for plus its trip and the operator's own queueing.
func apiserverCallCreates(b *testing.B) histogram {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(apiserverMetrics(b)))
	if err != nil {
		b.Fatal(err)
	}
	var out histogram
	for _, m := range families["apiserver_request_duration_seconds"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["verb"] != "POST" || labels["resource"] != "calls" {
			continue
		}
		h := m.GetHistogram()
		out.count += h.GetSampleCount()
		out.sum += h.GetSampleSum()
		for i, bucket := range h.GetBucket() {
			if len(out.bounds) <= i {
				out.bounds = append(out.bounds, bucket.GetUpperBound())
				out.counts = append(out.counts, 0)
			}
			out.counts[i] += bucket.GetCumulativeCount()
		}
	}
	return out
}

// reportCreates reports the apiserver's Call creates since before: their
// mean and the bucket bound under which 99 % of them fell.
func reportCreates(b *testing.B, before histogram) {
	creates := apiserverCallCreates(b).minus(before)
	b.ReportMetric(creates.meanMS(), "apiserver-create-mean-ms")
	b.ReportMetric(creates.quantileBoundMS(0.99), "apiserver-create-p99-under-ms")
}

// apiserverMetrics is the apiserver's /metrics, as its administrator reads
// them.
func apiserverMetrics(b *testing.B) []byte {
	httpc, err := rest.HTTPClientFor(restConfig)
	if err != nil {
		b.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), "GET", strings.TrimSuffix(restConfig.Host, "/")+"/metrics", nil)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return body
}
