package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// BenchmarkCampaignStart uploads a campaign of 100,000 contacts as a CSV
// file (multipart) to an operator running its reconcilers, and reports how
// long the upload took to be answered 201 and how long after that the
// first call was created. The campaign is canceled after its first call.
func BenchmarkCampaignStart(b *testing.B) {
	full, err := StartOperator(true)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(full.Stop)
	o := NewOrg(b)
	const contacts = 100_000
	var csv bytes.Buffer
	csv.WriteString("to_number,customer_name\n")
	for i := range contacts {
		fmt.Fprintf(&csv, "+1212%07d,Customer %d\n", 2_000_000+i, i)
	}
	b.Logf("CSV of %d contacts: %.1f MB", contacts, float64(csv.Len())/1e6)
	var uploads, firstDials []time.Duration
	for b.Loop() {
		body, contentType := CampaignUpload(b, o.AgentID, csv.Bytes())
		start := time.Now()
		r := SendWithHeader(b, full.BaseURL, "POST", "/v1/campaigns", "Bearer "+o.Key, body,
			http.Header{"Content-Type": {contentType}})
		accepted := time.Now()
		if r.Status != http.StatusCreated {
			b.Fatalf("upload: %d %s", r.Status, r.Raw)
		}
		id := r.Body["campaign_id"].(string)
		for {
			var calls switchboardv1.CallList
			if err := K8s.List(context.Background(), &calls, client.InNamespace(o.Ns),
				client.MatchingLabels{switchboardv1.CampaignLabel: id}); err != nil {
				b.Fatal(err)
			}
			if len(calls.Items) > 0 {
				break
			}
			if time.Since(accepted) > time.Minute {
				b.Fatal("no call a minute after the upload")
			}
			time.Sleep(5 * time.Millisecond) // polling the apiserver, as a watcher would see it
		}
		firstDials = append(firstDials, time.Since(accepted))
		uploads = append(uploads, accepted.Sub(start))
		SendWithHeader(b, full.BaseURL, "POST", "/v1/campaigns/"+id+"/cancel", "Bearer "+o.Key, nil, nil)
	}
	b.ReportMetric(Mean(uploads).Seconds(), "upload-s")
	b.ReportMetric(float64(Mean(firstDials).Milliseconds()), "first-dial-ms")
}

// BenchmarkCampaignUploadMemory posts, to the running operator over HTTP,
// the CSV shaped to grow in memory (amplifyingCSV: 100 column names of
// 1,000 characters over 1,000 rows of empty fields), and the widest one the
// bounds let through a row at a time (100 names of 128 characters, 10,000
// rows: refused once its contacts pass 64 MiB decoded), and reports what
// the operator's process allocated per upload: a bound on what the upload
// could hold at once.
// The issue measured 216 MB of the operator's memory for the first.
func BenchmarkCampaignUploadMemory(b *testing.B) {
	o := NewOrg(b)
	wide := new(strings.Builder)
	wide.WriteString("to_number,customer_name")
	for i := range 99 {
		fmt.Fprintf(wide, ",%03d%s", i, strings.Repeat("x", 125))
	}
	wide.WriteString("\n")
	for i := range 10_000 {
		fmt.Fprintf(wide, "+1212%07d,Ada%s\n", i, strings.Repeat(",", 99))
	}
	for _, tc := range []struct{ name, csv string }{{"amplifying", AmplifyingCSV()}, {"widest", wide.String()}} {
		b.Run(tc.name, func(b *testing.B) {
			body, contentType := CampaignUpload(b, o.AgentID, []byte(tc.csv))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var r Response
			for b.Loop() {
				r = SendWithHeader(b, Operator.BaseURL, "POST", "/v1/campaigns", "Bearer "+o.Key, body,
					http.Header{"Content-Type": {contentType}})
			}
			runtime.ReadMemStats(&after)
			perUpload := float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N)
			b.ReportMetric(perUpload/1e6, "MB-allocated/op")
			b.Logf("%s: %.0f KB upload, answered %d %.160s", tc.name, float64(len(body))/1e3, r.Status, r.Raw)
		})
	}
}
