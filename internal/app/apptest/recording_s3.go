package apptest

// Recordings in S3: the operator stores an answered call's recording in a
// real S3 server (versitygw, started by s3test) and hands out presigned S3
// links, in the call object and from the recording endpoint.

import (
	"context"
	"io"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// CallRecording reads status.recording of the Call whose call_id is id.
func CallRecording(t *testing.T, ns, id string) *switchboardv1.CallRecording {
	t.Helper()
	var calls switchboardv1.CallList
	NewWithT(t).Expect(K8s.List(context.Background(), &calls, client.InNamespace(ns))).To(Succeed())
	for _, c := range calls.Items {
		if c.Status.CallID == id && c.Status.Recording != nil {
			return c.Status.Recording
		}
	}
	t.Fatalf("no Call with call_id %s and a recording in %s", id, ns)
	return nil
}

// ExpectWAV downloads url without credentials, as a browser would, and
// expects the WAV the Call's status describes.
func ExpectWAV(t *testing.T, url string, size int64) {
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
