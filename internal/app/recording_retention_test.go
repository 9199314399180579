package app_test

// Recordings are deleted after --recording-retention, once their call has
// left the cluster; the archived call stays, without its recording.

import (
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/switchboard-dev/switchboard/internal/app"
)

func TestRecordingRetention(t *testing.T) {
	withOperator(t, func(o *app.Options) {
		o.Retention.Calls = 300 * time.Millisecond
		o.Retention.Recordings = 2 * time.Second
	})
	g := NewWithT(t)
	o := newOrg(t)
	answered := o.createCall(t, "+14155551234", map[string]any{"metadata": map[string]any{"order": 7}})
	live := o.waitAnalyzed(t, answered)
	g.Expect(live["recording_url"]).NotTo(BeNil())
	file := filepath.Join(recordDir, o.ns, answered+".wav")
	g.Expect(file).To(BeARegularFile())
	// A link handed out before the deletion, fetched while it still works.
	rec := do(t, "GET", "/v1/calls/"+answered+"/recording", o.key, nil)
	g.Expect(rec.status).To(Equal(http.StatusOK), string(rec.raw))
	link := rec.body["url"].(string)
	g.Expect(fetchStatus(t, link)).To(Equal(http.StatusOK))
	g.Expect(do(t, "GET", "/v1/calls/"+answered+"/transcript", o.key, nil).status).To(Equal(http.StatusOK))

	waitRemoved(t, o.ns, answered)
	g.Eventually(func() any {
		return o.getCall(t, answered)["recording_url"]
	}, 10*time.Second, 100*time.Millisecond).Should(BeNil(), "recording of %s never deleted", answered)

	// Gone from the recording store and then from the archived call (the
	// file goes first, so the link is null a moment before the record
	// changes), which is otherwise as it was.
	_, err := os.Stat(file)
	g.Expect(err).To(MatchError(fs.ErrNotExist))
	g.Eventually(func() any {
		stored, err := historyStore.GetCall(context.Background(), o.ns, answered)
		g.Expect(err).NotTo(HaveOccurred())
		return stored.Status.Recording
	}, 5*time.Second, 50*time.Millisecond).Should(BeNil(), "the archived call still names its deleted recording")
	g.Expect(withoutLink(o.getCall(t, answered))).To(Equal(withoutLink(live)))
	g.Expect(do(t, "GET", "/v1/calls/"+answered+"/recording", o.key, nil).status).To(Equal(http.StatusNotFound))
	g.Expect(fetchStatus(t, link)).To(Equal(http.StatusNotFound))
	// The transcript, personal data too, goes with the same retention (the
	// recording's stored time is kept to the second, so it may go a moment
	// before the transcript).
	g.Eventually(func() any {
		gone := do(t, "GET", "/v1/calls/"+answered+"/transcript", o.key, nil)
		if gone.status != http.StatusNotFound {
			return gone.status
		}
		return detail(t, gone)["error_code"]
	}, 5*time.Second, 50*time.Millisecond).Should(Equal("transcript_not_found"))
}

// fetchStatus GETs a recording link as a browser would.
func fetchStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
