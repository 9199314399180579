package app_test

// Calls leave the cluster after --call-retention and live on in the
// history store: archive then delete, the same call object from GET,
// GET /v1/calls across the live/archived boundary, and a store that goes
// away (PostgreSQL stopped mid-run) without losing a call.

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/history/pgtest"
)

const shortRetention = 500 * time.Millisecond

// waitRemoved waits until the call's resource has left the cluster.
func waitRemoved(t *testing.T, ns, id string) {
	t.Helper()
	NewWithT(t).Eventually(func() bool {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: callName(id)}, &switchboardv1.Call{})
		return apierrors.IsNotFound(err)
	}, 20*time.Second, 50*time.Millisecond).Should(BeTrue(), "call %s still in the cluster", id)
}

// withoutLink drops the recording link, which is signed afresh at each read.
func withoutLink(call map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range call {
		if k != "recording_url" {
			out[k] = v
		}
	}
	return out
}

func TestArchivedCallReadsAsItDidLive(t *testing.T) {
	withOperator(t, func(o *app.Options) { o.Retention.Calls = shortRetention })
	g := NewWithT(t)
	o := newOrg(t)
	answered := o.createCall(t, "+14155551234", map[string]any{"metadata": map[string]any{"order": 42}})
	busy := o.createCall(t, "+14155550001", nil)
	refused := do(t, "POST", "/v1/calls", o.key, map[string]any{"agent_id": o.agentID, "to_number": "+14155550008",
		"variables": map[string]any{"customer_name": "Ada"}})
	g.Expect(refused.status).To(Equal(http.StatusBadGateway))
	failed := detail(t, refused)["call_id"].(string)

	live := map[string]map[string]any{}
	for _, id := range []string{answered, busy} {
		live[id] = o.waitAnalyzed(t, id)
	}
	live[failed] = o.getCall(t, failed)
	for _, id := range []string{answered, busy, failed} {
		waitRemoved(t, o.ns, id)
		archived := o.getCall(t, id)
		g.Expect(withoutLink(archived)).To(Equal(withoutLink(live[id])), "call %s", id)
		stored, err := historyStore.GetCall(context.Background(), o.ns, id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stored.Status.Phase).To(BeElementOf(switchboardv1.CallEnded, switchboardv1.CallFailed))
	}
	g.Expect(live[failed]["status"]).To(Equal("failed"))

	// The recording of an archived call: a fresh link that works.
	archived := o.getCall(t, answered)
	g.Expect(archived["recording_url"]).NotTo(BeNil())
	rec := do(t, "GET", "/v1/calls/"+answered+"/recording", o.key, nil)
	g.Expect(rec.status).To(Equal(http.StatusOK), string(rec.raw))
	resp, err := http.Get(rec.body["url"].(string)) //nolint:noctx // test
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(do(t, "GET", "/v1/calls/"+busy+"/recording", o.key, nil).status).To(Equal(http.StatusNotFound))

	// Another organization sees none of it.
	other := newOrg(t)
	g.Expect(do(t, "GET", "/v1/calls/"+answered, other.key, nil).status).To(Equal(http.StatusNotFound))
	g.Expect(do(t, "GET", "/v1/calls", other.key, nil).body["data"]).To(BeEmpty())
}

// listAll walks every page of query with page size limit and returns the ids.
func listAll(t *testing.T, key, query string, limit int) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for page := 0; page < 100; page++ {
		q, err := url.ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		q.Set("limit", strconv.Itoa(limit))
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := do(t, "GET", "/v1/calls?"+q.Encode(), key, nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET /v1/calls?%s = %d %s", q.Encode(), r.status, r.raw)
		}
		data := r.body["data"].([]any)
		if len(data) > limit {
			t.Fatalf("page of %d calls for limit %d", len(data), limit)
		}
		for _, c := range data {
			ids = append(ids, c.(map[string]any)["call_id"].(string))
		}
		if r.body["has_more"] != true {
			if r.body["next_cursor"] != nil {
				t.Fatalf("last page has next_cursor %v", r.body["next_cursor"])
			}
			return ids
		}
		cursor = r.body["next_cursor"].(string)
	}
	t.Fatal("more than 100 pages")
	return nil
}

func TestListCallsAcrossLiveAndArchived(t *testing.T) {
	g := NewWithT(t)
	withOperator(t, func(o *app.Options) { o.Retention.Calls = shortRetention })
	o := newOrg(t)
	// Oldest first: three calls that will have left the cluster...
	var created []string
	for _, n := range []string{"+14155551234", "+14155550001", "+14155552222"} {
		created = append(created, o.createCall(t, n, nil))
	}
	for _, id := range created {
		o.waitAnalyzed(t, id)
		waitRemoved(t, o.ns, id)
	}
	boundary := time.Now().UTC()
	// ... then, with the default retention, three that stay in it.
	withOperator(t, func(*app.Options) {})
	for _, n := range []string{"+14155550001", "+14155551234", "+14155553333"} {
		created = append(created, o.createCall(t, n, nil))
	}
	for _, id := range created[3:] {
		o.waitAnalyzed(t, id)
	}
	g.Expect(countCalls(t, o.ns)).To(Equal(3), "three calls live, three archived")
	newestFirst := []string{created[5], created[4], created[3], created[2], created[1], created[0]}

	for _, limit := range []int{1, 2, 4, 50} {
		g.Expect(listAll(t, o.key, "", limit)).To(Equal(newestFirst), "limit %d", limit)
	}
	g.Expect(listAll(t, o.key, "disposition=busy", 1)).To(Equal([]string{created[3], created[1]}))
	g.Expect(listAll(t, o.key, "to_number=%2B14155551234", 1)).To(Equal([]string{created[4], created[0]}))
	g.Expect(listAll(t, o.key, "to_number=(415) 555-1234", 1)).To(Equal([]string{created[4], created[0]}), "read like a create's number")
	g.Expect(listAll(t, o.key, "status=ended&source=api&agent_id="+strings.ToUpper(o.agentID), 5)).To(Equal(newestFirst))
	g.Expect(listAll(t, o.key, "status=queued", 5)).To(BeEmpty())
	g.Expect(listAll(t, o.key, "created_after="+boundary.Format(time.RFC3339Nano), 2)).To(Equal(newestFirst[:3]))
	g.Expect(listAll(t, o.key, "created_before="+boundary.Format(time.RFC3339Nano), 2)).To(Equal(newestFirst[3:]))

	// A page holds call objects exactly as GET returns them.
	first := do(t, "GET", "/v1/calls?limit=1", o.key, nil)
	g.Expect(first.body["data"].([]any)[0].(map[string]any)).To(HaveKeyWithValue("call_id", created[5]))
	g.Expect(withoutLink(first.body["data"].([]any)[0].(map[string]any))).To(Equal(withoutLink(o.getCall(t, created[5]))))
	g.Expect(do(t, "GET", "/v1/calls?limit=6", o.key, nil).body).To(HaveKeyWithValue("has_more", false))
}

func TestListCallsRejectsBadFilters(t *testing.T) {
	o := newOrg(t)
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
			r := do(t, "GET", "/v1/calls?"+tt.query, o.key, nil)
			g.Expect(r.status).To(Equal(http.StatusUnprocessableEntity), string(r.raw))
			items := r.body["detail"].([]any)
			g.Expect(items).To(HaveLen(1))
			item := items[0].(map[string]any)
			g.Expect(item["loc"]).To(Equal([]any{"query", tt.field}))
			g.Expect(item["type"]).To(Equal(tt.typ))
			g.Expect(item["msg"]).NotTo(BeEmpty())
		})
	}
	g := NewWithT(t)
	g.Expect(do(t, "GET", "/v1/calls?limit=1000", o.key, nil).status).To(Equal(http.StatusOK))
	g.Expect(do(t, "GET", "/v1/calls", "", nil).status).To(Equal(http.StatusUnauthorized))
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
	withOperator(t, func(o *app.Options) { o.History, o.Retention.Calls = store, shortRetention })
	o := newOrg(t)
	before := o.createCall(t, "+14155551234", nil)
	o.waitAnalyzed(t, before)
	waitRemoved(t, o.ns, before)

	pg.Stop()
	during := o.createCall(t, "+14155551234", nil)
	o.waitAnalyzed(t, during)
	key := client.ObjectKey{Namespace: o.ns, Name: callName(during)}
	g.Eventually(func(g Gomega) {
		var c switchboardv1.Call
		g.Expect(k8s.Get(context.Background(), key, &c)).To(Succeed())
		cond := apimeta.FindStatusCondition(c.Status.Conditions, switchboardv1.ArchivedCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(BeEquivalentTo("False"))
		g.Expect(cond.Reason).To(Equal(switchboardv1.ReasonStoreUnavailable))
	}, 20*time.Second, 50*time.Millisecond).Should(Succeed())
	kc := controlPlane.Kubectl(t)
	g.Eventually(func() string {
		return kc.MustRun(t, "describe", "call", callName(during), "-n", o.ns).Stdout
	}, 10*time.Second, 100*time.Millisecond).Should(MatchRegexp(`Warning\s+ArchiveFailed`))
	// Past its retention, still in the cluster, still readable.
	time.Sleep(2 * shortRetention)
	g.Expect(k8s.Get(context.Background(), key, &switchboardv1.Call{})).To(Succeed())
	g.Expect(o.getCall(t, during)["status"]).To(Equal("ended"))
	// An archived call cannot be read while the store is down: 503, retry.
	r := do(t, "GET", "/v1/calls/"+before, o.key, nil)
	g.Expect(r.status).To(Equal(http.StatusServiceUnavailable), string(r.raw))

	pg.Start()
	waitRemoved(t, o.ns, during)
	for _, id := range []string{before, during} {
		stored, err := store.GetCall(context.Background(), o.ns, id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stored.Status.Analysis).NotTo(BeNil())
	}
	// The transcript the store could not take when the call ended was
	// kept and written with the archive.
	transcript, err := store.GetTranscript(context.Background(), o.ns, during)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(transcript.Turns).NotTo(BeEmpty())
	stored, _ := store.GetCall(context.Background(), o.ns, during)
	cond := apimeta.FindStatusCondition(stored.Status.Conditions, switchboardv1.ArchivedCondition)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Reason).To(Equal(switchboardv1.ReasonArchived))
	g.Expect(listAll(t, o.key, "", 1)).To(Equal([]string{during, before}))
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
	withOperator(t, func(o *app.Options) { o.History = store })
	o := newOrg(t)
	rc := newReceiver(t, nil)
	_, secret := applyEndpoint(t, o.ns, rc.url(), nil)
	rc.trust(secret)

	pg.Stop()
	id := o.createCall(t, "+14155551234", nil)
	o.waitAnalyzed(t, id)
	time.Sleep(time.Second)
	g.Expect(rc.forCall(id)).To(BeEmpty(), "delivered while the store was down")

	pg.Start()
	g.Eventually(func() int { return len(rc.forCall(id)) }, 30*time.Second, 50*time.Millisecond).Should(Equal(3))
	time.Sleep(500 * time.Millisecond) // nothing more arrives
	got := rc.forCall(id)
	g.Expect(got).To(HaveLen(3))
	ids := map[string]bool{}
	var events []string
	for _, d := range got {
		expectSigned(g, d)
		ids[d.id] = true
		events = append(events, d.event)
	}
	g.Expect(ids).To(HaveLen(3), "one id per event")
	g.Expect(events).To(Equal([]string{"call.started", "call.ended", "call.analyzed"}))
}
