package calls_test

// Calls leave the cluster after --call-retention and live on in the
// history store: archive then delete, the same call object from GET,
// GET /v1/calls across the live/archived boundary, and a store that goes
// away (PostgreSQL stopped mid-run) without losing a call.

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/history/pgtest"
)

func TestArchivedCallReadsAsItDidLive(t *testing.T) {
	WithOperator(t, func(o *app.Options) { o.Retention.Calls = ShortRetention })
	g := NewWithT(t)
	o := NewOrg(t)
	answered := o.CreateCall(t, "+14155551234", map[string]any{"metadata": map[string]any{"order": 42}})
	busy := o.CreateCall(t, "+14155550001", nil)
	refused := Do(t, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": o.AgentID, "to_number": "+14155550008",
		"variables": map[string]any{"customer_name": "Ada"}})
	g.Expect(refused.Status).To(Equal(http.StatusBadGateway))
	failed := Detail(t, refused)["call_id"].(string)

	live := map[string]map[string]any{}
	for _, id := range []string{answered, busy} {
		live[id] = o.WaitAnalyzed(t, id)
	}
	live[failed] = o.GetCall(t, failed)
	for _, id := range []string{answered, busy, failed} {
		WaitRemoved(t, o.Ns, id)
		archived := o.GetCall(t, id)
		g.Expect(WithoutLink(archived)).To(Equal(WithoutLink(live[id])), "call %s", id)
		stored, err := HistoryStore.GetCall(context.Background(), o.Ns, id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stored.Status.Phase).To(BeElementOf(switchboardv1.CallEnded, switchboardv1.CallFailed))
	}
	g.Expect(live[failed]["status"]).To(Equal("failed"))

	// The recording of an archived call: a fresh link that works.
	archived := o.GetCall(t, answered)
	g.Expect(archived["recording_url"]).NotTo(BeNil())
	rec := Do(t, "GET", "/v1/calls/"+answered+"/recording", o.Key, nil)
	g.Expect(rec.Status).To(Equal(http.StatusOK), string(rec.Raw))
	resp, err := http.Get(rec.Body["url"].(string)) //nolint:noctx // test
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(Do(t, "GET", "/v1/calls/"+busy+"/recording", o.Key, nil).Status).To(Equal(http.StatusNotFound))

	// Another organization sees none of it.
	other := NewOrg(t)
	g.Expect(Do(t, "GET", "/v1/calls/"+answered, other.Key, nil).Status).To(Equal(http.StatusNotFound))
	g.Expect(Do(t, "GET", "/v1/calls", other.Key, nil).Body["data"]).To(BeEmpty())
}

func TestListCallsAcrossLiveAndArchived(t *testing.T) {
	g := NewWithT(t)
	WithOperator(t, func(o *app.Options) { o.Retention.Calls = ShortRetention })
	o := NewOrg(t)
	// Oldest first: three calls that will have left the cluster...
	var created []string
	for _, n := range []string{"+14155551234", "+14155550001", "+14155552222"} {
		created = append(created, o.CreateCall(t, n, nil))
	}
	for _, id := range created {
		o.WaitAnalyzed(t, id)
		WaitRemoved(t, o.Ns, id)
	}
	boundary := time.Now().UTC()
	// ... then, with the default retention, three that stay in it.
	WithOperator(t, func(*app.Options) {})
	for _, n := range []string{"+14155550001", "+14155551234", "+14155553333"} {
		created = append(created, o.CreateCall(t, n, nil))
	}
	for _, id := range created[3:] {
		o.WaitAnalyzed(t, id)
	}
	g.Expect(CountCalls(t, o.Ns)).To(Equal(3), "three calls live, three archived")
	newestFirst := []string{created[5], created[4], created[3], created[2], created[1], created[0]}

	for _, limit := range []int{1, 2, 4, 50} {
		g.Expect(ListAll(t, o.Key, "", limit)).To(Equal(newestFirst), "limit %d", limit)
	}
	g.Expect(ListAll(t, o.Key, "disposition=busy", 1)).To(Equal([]string{created[3], created[1]}))
	g.Expect(ListAll(t, o.Key, "to_number=%2B14155551234", 1)).To(Equal([]string{created[4], created[0]}))
	g.Expect(ListAll(t, o.Key, "to_number=(415) 555-1234", 1)).To(Equal([]string{created[4], created[0]}), "read like a create's number")
	g.Expect(ListAll(t, o.Key, "status=ended&source=api&agent_id="+strings.ToUpper(o.AgentID), 5)).To(Equal(newestFirst))
	g.Expect(ListAll(t, o.Key, "status=queued", 5)).To(BeEmpty())
	g.Expect(ListAll(t, o.Key, "created_after="+boundary.Format(time.RFC3339Nano), 2)).To(Equal(newestFirst[:3]))
	g.Expect(ListAll(t, o.Key, "created_before="+boundary.Format(time.RFC3339Nano), 2)).To(Equal(newestFirst[3:]))

	// A page holds call objects exactly as GET returns them.
	first := Do(t, "GET", "/v1/calls?limit=1", o.Key, nil)
	g.Expect(first.Body["data"].([]any)[0].(map[string]any)).To(HaveKeyWithValue("call_id", created[5]))
	g.Expect(WithoutLink(first.Body["data"].([]any)[0].(map[string]any))).To(Equal(WithoutLink(o.GetCall(t, created[5]))))
	g.Expect(Do(t, "GET", "/v1/calls?limit=6", o.Key, nil).Body).To(HaveKeyWithValue("has_more", false))
}

func TestListCallsRejectsBadFilters(t *testing.T) {
	o := NewOrg(t)
	for _, tt := range []struct{ query, field, typ string }{
		{"status=done", "status", "enum"},
		{"disposition=hung_up", "disposition", "enum"},
		{"source=web", "source", "enum"},
		{"agent_id=nope", "agent_id", "uuid_parsing"},
		{"to_number=555", "to_number", "value_error"},
		{"created_after=yesterday", "created_after", "datetime_from_date_parsing"},
		{"created_before=2026-13-01T00:00:00Z", "created_before", "datetime_from_date_parsing"},
		{"limit=0", "limit", "greater_than_equal"},
		{"limit=1001", "limit", "less_than_equal"},
		{"limit=ten", "limit", "int_parsing"},
		{"cursor=not*a*cursor", "cursor", "string_pattern_mismatch"},
		{"cursor=Zm9v", "cursor", "string_pattern_mismatch"},
	} {
		t.Run(tt.query, func(t *testing.T) {
			g := NewWithT(t)
			r := Do(t, "GET", "/v1/calls?"+tt.query, o.Key, nil)
			g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity), string(r.Raw))
			items := r.Body["detail"].([]any)
			g.Expect(items).To(HaveLen(1))
			item := items[0].(map[string]any)
			g.Expect(item["loc"]).To(Equal([]any{"query", tt.field}))
			g.Expect(item["type"]).To(Equal(tt.typ))
			g.Expect(item["msg"]).NotTo(BeEmpty())
		})
	}
	g := NewWithT(t)
	g.Expect(Do(t, "GET", "/v1/calls?limit=1000", o.Key, nil).Status).To(Equal(http.StatusOK))
	g.Expect(Do(t, "GET", "/v1/calls", "", nil).Status).To(Equal(http.StatusUnauthorized))
}

// TestHistoryStoreDown stops PostgreSQL mid-run: calls are still accepted,
// placed and readable; the one that cannot be archived stays in the
// cluster and says why; once the store is back it is archived and leaves.
func TestHistoryStoreDown(t *testing.T) {
	g := NewWithT(t)
	pg := pgtest.NewServer(t)
	store, err := history.Open(context.Background(), pg.DSN())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = store.Close() })
	WithOperator(t, func(o *app.Options) { o.History, o.Retention.Calls = store, ShortRetention })
	o := NewOrg(t)
	before := o.CreateCall(t, "+14155551234", nil)
	o.WaitAnalyzed(t, before)
	WaitRemoved(t, o.Ns, before)

	pg.Stop()
	during := o.CreateCall(t, "+14155551234", nil)
	o.WaitAnalyzed(t, during)
	key := client.ObjectKey{Namespace: o.Ns, Name: CallName(during)}
	g.Eventually(func(g Gomega) {
		var c switchboardv1.Call
		g.Expect(K8s.Get(context.Background(), key, &c)).To(Succeed())
		cond := apimeta.FindStatusCondition(c.Status.Conditions, switchboardv1.ArchivedCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(BeEquivalentTo("False"))
		g.Expect(cond.Reason).To(Equal(switchboardv1.ReasonStoreUnavailable))
	}, 20*time.Second, 50*time.Millisecond).Should(Succeed())
	kc := ControlPlane.Kubectl(t)
	g.Eventually(func() string {
		return kc.MustRun(t, "describe", "call", CallName(during), "-n", o.Ns).Stdout
	}, 10*time.Second, 100*time.Millisecond).Should(MatchRegexp(`Warning\s+ArchiveFailed`))
	// Past its retention, still in the cluster, still readable.
	time.Sleep(2 * ShortRetention)
	g.Expect(K8s.Get(context.Background(), key, &switchboardv1.Call{})).To(Succeed())
	g.Expect(o.GetCall(t, during)["status"]).To(Equal("ended"))
	// An archived call cannot be read while the store is down: 503, retry.
	r := Do(t, "GET", "/v1/calls/"+before, o.Key, nil)
	g.Expect(r.Status).To(Equal(http.StatusServiceUnavailable), string(r.Raw))

	pg.Start()
	WaitRemoved(t, o.Ns, during)
	for _, id := range []string{before, during} {
		stored, err := store.GetCall(context.Background(), o.Ns, id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stored.Status.Analysis).NotTo(BeNil())
	}
	// The transcript the store could not take when the call ended was
	// kept and written with the archive.
	transcript, err := store.GetTranscript(context.Background(), o.Ns, during)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(transcript.Turns).NotTo(BeEmpty())
	stored, _ := store.GetCall(context.Background(), o.Ns, during)
	cond := apimeta.FindStatusCondition(stored.Status.Conditions, switchboardv1.ArchivedCondition)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Reason).To(Equal(switchboardv1.ReasonArchived))
	g.Expect(ListAll(t, o.Key, "", 1)).To(Equal([]string{during, before}))
}

// TestDeliveriesWaitForTheStore: with PostgreSQL stopped, a call is placed
// and ends, but its events cannot be queued; once the store is back they
// are queued and delivered, in order, each once and under one id.
func TestDeliveriesWaitForTheStore(t *testing.T) {
	g := NewWithT(t)
	pg := pgtest.NewServer(t)
	store, err := history.Open(context.Background(), pg.DSN())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = store.Close() })
	WithOperator(t, func(o *app.Options) { o.History = store })
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	_, secret := ApplyEndpoint(t, o.Ns, rc.URL(), nil)
	rc.Trust(secret)

	pg.Stop()
	id := o.CreateCall(t, "+14155551234", nil)
	o.WaitAnalyzed(t, id)
	time.Sleep(time.Second)
	g.Expect(rc.ForCall(id)).To(BeEmpty(), "delivered while the store was down")

	pg.Start()
	g.Eventually(func() int { return len(rc.ForCall(id)) }, 30*time.Second, 50*time.Millisecond).Should(Equal(3))
	time.Sleep(500 * time.Millisecond) // nothing more arrives
	got := rc.ForCall(id)
	g.Expect(got).To(HaveLen(3))
	ids := map[string]bool{}
	var events []string
	for _, d := range got {
		ExpectSigned(g, d)
		ids[d.ID] = true
		events = append(events, d.Event)
	}
	g.Expect(ids).To(HaveLen(3), "one id per event")
	g.Expect(events).To(Equal([]string{"call.started", "call.ended", "call.analyzed"}))
}
