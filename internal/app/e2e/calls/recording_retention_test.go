package calls_test

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
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

func TestRecordingRetention(t *testing.T) {
	WithOperator(t, func(o *app.Options) {
		o.Retention.Calls = 300 * time.Millisecond
		o.Retention.Recordings = 2 * time.Second
	})
	g := NewWithT(t)
	o := NewOrg(t)
	answered := o.CreateCall(t, "+14155551234", map[string]any{"metadata": map[string]any{"order": 7}})
	live := o.WaitAnalyzed(t, answered)
	g.Expect(live["recording_url"]).NotTo(BeNil())
	file := filepath.Join(RecordDir, o.Ns, answered+".wav")
	g.Expect(file).To(BeARegularFile())
	// A link handed out before the deletion, fetched while it still works.
	rec := Do(t, "GET", "/v1/calls/"+answered+"/recording", o.Key, nil)
	g.Expect(rec.Status).To(Equal(http.StatusOK), string(rec.Raw))
	link := rec.Body["url"].(string)
	g.Expect(FetchStatus(t, link)).To(Equal(http.StatusOK))
	g.Expect(Do(t, "GET", "/v1/calls/"+answered+"/transcript", o.Key, nil).Status).To(Equal(http.StatusOK))

	WaitRemoved(t, o.Ns, answered)
	g.Eventually(func() any {
		return o.GetCall(t, answered)["recording_url"]
	}, 10*time.Second, 100*time.Millisecond).Should(BeNil(), "recording of %s never deleted", answered)

	// Gone from the recording store and then from the archived call (the
	// file goes first, so the link is null a moment before the record
	// changes), which is otherwise as it was.
	_, err := os.Stat(file)
	g.Expect(err).To(MatchError(fs.ErrNotExist))
	g.Eventually(func() any {
		stored, err := HistoryStore.GetCall(context.Background(), o.Ns, answered)
		g.Expect(err).NotTo(HaveOccurred())
		return stored.Status.Recording
	}, 5*time.Second, 50*time.Millisecond).Should(BeNil(), "the archived call still names its deleted recording")
	g.Expect(WithoutLink(o.GetCall(t, answered))).To(Equal(WithoutLink(live)))
	g.Expect(Do(t, "GET", "/v1/calls/"+answered+"/recording", o.Key, nil).Status).To(Equal(http.StatusNotFound))
	g.Expect(FetchStatus(t, link)).To(Equal(http.StatusNotFound))
	// The transcript, personal data too, goes with the same retention (the
	// recording's stored time is kept to the second, so it may go a moment
	// before the transcript).
	g.Eventually(func() any {
		gone := Do(t, "GET", "/v1/calls/"+answered+"/transcript", o.Key, nil)
		if gone.Status != http.StatusNotFound {
			return gone.Status
		}
		return Detail(t, gone)["error_code"]
	}, 5*time.Second, 50*time.Millisecond).Should(Equal("transcript_not_found"))
}
