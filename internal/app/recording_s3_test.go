package app_test

// Recordings in S3: the operator stores an answered call's recording in a
// real S3 server (versitygw, started by s3test) and hands out presigned S3
// links, in the call object and from the recording endpoint.

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/recording/s3test"
)

func TestRecordingInS3(t *testing.T) {
	g := NewWithT(t)
	s3, _ := s3test.Start(t) // stopped after the operator: cleanups run last-in first-out
	s3.Prefix = "switchboard/test"
	withOperator(t, func(opts *app.Options) { opts.RecordingS3 = &s3 })
	o := newOrg(t)

	id := o.createCall(t, "+14155551234", nil)
	call := o.waitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	stored := callRecording(t, o.ns, id)
	g.Expect(stored.Key).To(Equal(o.ns + "/" + id + ".wav"))
	g.Expect(stored.SizeBytes).To(BeNumerically(">", 44))

	// The call object links to the object in the bucket, presigned: the
	// operator serves no recording files.
	object := "http://" + s3.Endpoint + "/" + s3.Bucket + "/switchboard/test/" + stored.Key + "?"
	url, _ := call["recording_url"].(string)
	g.Expect(url).To(HavePrefix(object))
	g.Expect(url).To(ContainSubstring("X-Amz-Signature="))
	g.Expect(url).NotTo(ContainSubstring(s3.SecretKey))
	expectWAV(t, url, stored.SizeBytes)
	g.Expect(do(t, "GET", "/recordings/"+stored.Key, "", nil).status).To(Equal(http.StatusNotFound))

	// The recording endpoint signs a fresh link of about an hour.
	rec := do(t, "GET", "/v1/calls/"+id+"/recording", o.key, nil)
	g.Expect(rec.status).To(Equal(http.StatusOK), string(rec.raw))
	fresh, _ := rec.body["url"].(string)
	g.Expect(fresh).To(HavePrefix(object))
	g.Expect(fresh).To(ContainSubstring("X-Amz-Expires=3600"))
	expires, err := time.Parse(time.RFC3339, rec.body["expires_at"].(string))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(time.Until(expires)).To(BeNumerically("~", time.Hour, time.Minute))
	expectWAV(t, fresh, stored.SizeBytes)

	// A link whose signature was tampered with is refused by S3.
	resp, err := http.Get(strings.Replace(fresh, "X-Amz-Signature=", "X-Amz-Signature=0", 1))
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
}

// callRecording reads status.recording of the Call whose call_id is id.
func callRecording(t *testing.T, ns, id string) *switchboardv1.CallRecording {
	t.Helper()
	var calls switchboardv1.CallList
	NewWithT(t).Expect(k8s.List(context.Background(), &calls, client.InNamespace(ns))).To(Succeed())
	for _, c := range calls.Items {
		if c.Status.CallID == id && c.Status.Recording != nil {
			return c.Status.Recording
		}
	}
	t.Fatalf("no Call with call_id %s and a recording in %s", id, ns)
	return nil
}

// expectWAV downloads url without credentials, as a browser would, and
// expects the WAV the Call's status describes.
func expectWAV(t *testing.T, url string, size int64) {
	t.Helper()
	g := NewWithT(t)
	resp, err := http.Get(url)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("audio/wav"))
	g.Expect(resp.Header.Get("Content-Encoding")).To(BeEmpty()) // a browser must play it as is
	g.Expect(len(body)).To(BeNumerically("==", size))
	g.Expect(string(body[:4])).To(Equal("RIFF"))
	g.Expect(string(body[8:12])).To(Equal("WAVE"))
}
