package apptest

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

// ApiserverCallCreates is the apiserver's own histogram of its Call
// creates (apiserver_request_duration_seconds, POST calls): the time
// between the request's arrival and its answer, which the operator's
// POST /v1/calls waits for plus its trip and the operator's own queueing.
func ApiserverCallCreates(b *testing.B) Histogram {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(ApiserverMetrics(b)))
	if err != nil {
		b.Fatal(err)
	}
	var out Histogram
	for _, m := range families["apiserver_request_duration_seconds"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["verb"] != "POST" || labels["resource"] != "calls" {
			continue
		}
		h := m.GetHistogram()
		out.Count += h.GetSampleCount()
		out.Sum += h.GetSampleSum()
		for i, bucket := range h.GetBucket() {
			if len(out.Bounds) <= i {
				out.Bounds = append(out.Bounds, bucket.GetUpperBound())
				out.Counts = append(out.Counts, 0)
			}
			out.Counts[i] += bucket.GetCumulativeCount()
		}
	}
	return out
}

// ReportCreates reports the apiserver's Call creates since before: their
// mean and the bucket bound under which 99 % of them fell.
func ReportCreates(b *testing.B, before Histogram) {
	creates := ApiserverCallCreates(b).Minus(before)
	b.ReportMetric(creates.MeanMS(), "apiserver-create-mean-ms")
	b.ReportMetric(creates.QuantileBoundMS(0.99), "apiserver-create-p99-under-ms")
}

// ApiserverMetrics is the apiserver's /metrics, as its administrator reads
// them.
func ApiserverMetrics(b *testing.B) []byte {
	httpc, err := rest.HTTPClientFor(RestConfig)
	if err != nil {
		b.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), "GET", strings.TrimSuffix(RestConfig.Host, "/")+"/metrics", nil)
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
