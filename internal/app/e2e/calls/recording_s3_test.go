package calls_test

// Recordings in S3: the operator stores an answered call's recording in a
// real S3 server (versitygw, started by s3test) and hands out presigned S3
// links, in the call object and from the recording endpoint.

import (
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/recording/s3test"
)

func TestRecordingInS3(t *testing.T) {
	g := NewWithT(t)
	s3, _ := s3test.Start(t) // stopped after the operator: cleanups run last-in first-out
	s3.Prefix = "switchboard/test"
	WithOperator(t, func(opts *app.Options) { opts.RecordingS3 = &s3 })
	o := NewOrg(t)

	id := o.CreateCall(t, "+14155551234", nil)
	call := o.WaitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	stored := CallRecording(t, o.Ns, id)
	g.Expect(stored.Key).To(Equal(o.Ns + "/" + id + ".wav"))
	g.Expect(stored.SizeBytes).To(BeNumerically(">", 44))

	// The call object links to the object in the bucket, presigned: the
	// operator serves no recording files.
	object := "http://" + s3.Endpoint + "/" + s3.Bucket + "/switchboard/test/" + stored.Key + "?"
	url, _ := call["recording_url"].(string)
	g.Expect(url).To(HavePrefix(object))
	g.Expect(url).To(ContainSubstring("X-Amz-Signature="))
	g.Expect(url).NotTo(ContainSubstring(s3.SecretKey))
	ExpectWAV(t, url, stored.SizeBytes)
	g.Expect(Do(t, "GET", "/recordings/"+stored.Key, "", nil).Status).To(Equal(http.StatusNotFound))

	// The recording endpoint signs a fresh link of about an hour.
	rec := Do(t, "GET", "/v1/calls/"+id+"/recording", o.Key, nil)
	g.Expect(rec.Status).To(Equal(http.StatusOK), string(rec.Raw))
	fresh, _ := rec.Body["url"].(string)
	g.Expect(fresh).To(HavePrefix(object))
	g.Expect(fresh).To(ContainSubstring("X-Amz-Expires=3600"))
	expires, err := time.Parse(time.RFC3339, rec.Body["expires_at"].(string))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(time.Until(expires)).To(BeNumerically("~", time.Hour, time.Minute))
	ExpectWAV(t, fresh, stored.SizeBytes)

	// A link whose signature was tampered with is refused by S3.
	resp, err := http.Get(strings.Replace(fresh, "X-Amz-Signature=", "X-Amz-Signature=0", 1))
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
}
