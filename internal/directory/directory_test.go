package directory

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// recordingIndexer collects the indexes IndexFields registers, so that the
// fake cache below is indexed by the very same functions.
type recordingIndexer struct {
	indexes []index
}

type index struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

func (r *recordingIndexer) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	r.indexes = append(r.indexes, index{obj, field, extract})
	return nil
}

func webhookEndpoint(ns, name, uid string) *switchboardv1.WebhookEndpoint {
	return &switchboardv1.WebhookEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec:       switchboardv1.WebhookEndpointSpec{URL: "https://example.com/hooks"},
	}
}

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	reads int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads++
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.reads++
	return c.Reader.List(ctx, list, opts...)
}

// newDirectory has cached in its (indexed) cache and live on its API
// server.
func newDirectory(t *testing.T, cached, live []client.Object) (*Directory, *countingReader) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := switchboardv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var ix recordingIndexer
	if err := IndexFields(context.Background(), &ix); err != nil {
		t.Fatal(err)
	}
	builder := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cached...)
	for _, i := range ix.indexes {
		builder = builder.WithIndex(i.obj, i.field, i.extract)
	}
	server := &countingReader{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(live...).Build()}
	return &Directory{Cache: builder.Build(), Live: server, MissGrace: -1}, server
}

func TestEndpoint(t *testing.T) {
	cached := webhookEndpoint("org-a", "crm", "11111111-1111-4111-8111-111111111111")
	fresh := webhookEndpoint("org-a", "endpoint-x", "22222222-2222-4222-8222-222222222222")
	applied := webhookEndpoint("org-a", "applied", "55555555-5555-4555-8555-555555555555")
	other := webhookEndpoint("org-b", "crm", "33333333-3333-4333-8333-333333333333")
	// The cache has not seen fresh and applied yet; the API server has.
	// Leaving cached out of the API server shows that the cache (its
	// index) answers it.
	d, server := newDirectory(t, []client.Object{cached.DeepCopy(), other.DeepCopy()},
		[]client.Object{fresh.DeepCopy(), applied.DeepCopy(), other.DeepCopy()})
	d.EndpointCreated(fresh) // by this process, moments ago
	tests := []struct {
		name, ns, id, want string
		reads              int // at the API server
	}{
		{"in the cache", "org-a", "we_11111111111141118111111111111111", "crm", 0},
		{"created here, not yet in the cache", "org-a", "we_22222222222242228222222222222222", "endpoint-x", 1},
		{"applied elsewhere, not yet in the cache", "org-a", "we_55555555555545558555555555555555", "", 0},
		{"another organization's", "org-a", "we_33333333333343338333333333333333", "", 0},
		{"created here, asked by another organization", "org-b", "we_22222222222242228222222222222222", "", 0},
		{"unknown", "org-a", "we_44444444444444444444444444444444", "", 0},
		{"the name is not the id", "org-a", "crm", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server.reads = 0
			ep, err := d.Endpoint(context.Background(), tt.ns, tt.id)
			if server.reads != tt.reads {
				t.Errorf("%d reads at the API server, want %d", server.reads, tt.reads)
			}
			if tt.want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("got %v, %v; want ErrNotFound", ep, err)
				}
				return
			}
			if err != nil || ep.Name != tt.want || ep.ResolvedID() != tt.id {
				t.Fatalf("got %v, %v; want %s", ep, err, tt.want)
			}
		})
	}
}

func TestRecentEndpointsExpire(t *testing.T) {
	var r recentEndpoints
	t0 := time.Now()
	key := types.NamespacedName{Namespace: "org", Name: "endpoint-a"}
	r.add("we_a", key, t0)
	r.add("we_b", types.NamespacedName{Namespace: "org", Name: "endpoint-b"}, t0.Add(recentWindow/2))
	if got, ok := r.lookup("we_a", t0.Add(recentWindow-time.Millisecond)); !ok || got != key {
		t.Fatalf("lookup within the window = %v, %v", got, ok)
	}
	if _, ok := r.lookup("we_a", t0.Add(recentWindow)); ok {
		t.Error("an endpoint created a window ago is still read live")
	}
	if _, ok := r.lookup("we_b", t0.Add(recentWindow)); !ok {
		t.Error("a later endpoint expired with an earlier one")
	}
	if len(r.byID) != 1 || len(r.order) != 1 {
		t.Errorf("expired entries are kept: %d, %d", len(r.byID), len(r.order))
	}
}

func agent(ns, name, uid, id string) *switchboardv1.Agent {
	return &switchboardv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: switchboardv1.AgentSpec{ID: id}}
}

// An agent_id the cache does not know is not found at no cost to the API
// server; the call reconciler's lookup confirms a miss there.
func TestAgent(t *testing.T) {
	const known, fresh = "7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f", "0d9e2a41-5c7b-4d1e-9f3a-6b8c7d2e1f00"
	cached := agent("org-a", "reminder", "11111111-1111-4111-8111-111111111111", known)
	applied := agent("org-a", "fresh", "22222222-2222-4222-8222-222222222222", fresh)
	d, server := newDirectory(t, []client.Object{cached.DeepCopy()}, []client.Object{cached.DeepCopy(), applied.DeepCopy()})
	tests := []struct {
		name, id  string
		confirmed bool
		want      string
		reads     int
	}{
		{"in the cache, any letter case", strings.ToUpper(known), false, "reminder", 0},
		{"not in the cache", fresh, false, "", 0},
		{"unknown", "9a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d", false, "", 0},
		{"confirmed: in the cache", known, true, "reminder", 0},
		{"confirmed: applied, not yet in the cache", fresh, true, "fresh", 1},
		{"confirmed: unknown", "9a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d", true, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server.reads = 0
			lookup := d.Agent
			if tt.confirmed {
				lookup = d.AgentConfirmed
			}
			a, err := lookup(context.Background(), "org-a", tt.id)
			if server.reads != tt.reads {
				t.Errorf("%d reads at the API server, want %d", server.reads, tt.reads)
			}
			if tt.want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("got %v, %v; want ErrNotFound", a, err)
				}
				return
			}
			if err != nil || a.Name != tt.want {
				t.Fatalf("got %v, %v; want %s", a, err, tt.want)
			}
		})
	}
}

// laggingCache answers "nothing" to the first misses lists, as an informer
// that has not yet delivered a new object.
type laggingCache struct {
	client.Reader
	misses int
	lists  int // how many lists it was asked
}

func (c *laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists++
	if c.misses > 0 {
		c.misses--
		return nil
	}
	return c.Reader.List(ctx, list, opts...)
}

// The REST API's lookups look at the cache again for a moment, so what was
// applied just before is found, still without asking the API server; an
// unknown id is not found once the grace is over.
func TestMissGrace(t *testing.T) {
	const id = "7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f"
	ep := webhookEndpoint("org-a", "crm", "11111111-1111-4111-8111-111111111111")
	d, server := newDirectory(t, []client.Object{agent("org-a", "reminder", "22222222-2222-4222-8222-222222222222", id), ep}, nil)
	lagging := &laggingCache{Reader: d.Cache}
	d.Cache, d.MissGrace = lagging, 500*time.Millisecond

	lagging.misses = 3
	if a, err := d.Agent(context.Background(), "org-a", id); err != nil || a.Name != "reminder" {
		t.Errorf("Agent while the cache lags = %v, %v", a, err)
	}
	lagging.misses = 3
	if got, err := d.Endpoint(context.Background(), "org-a", ep.ResolvedID()); err != nil || got.Name != "crm" {
		t.Errorf("Endpoint while the cache lags = %v, %v", got, err)
	}
	lagging.misses = 3
	if _, err := d.CachedAgent(context.Background(), "org-a", id); !errors.Is(err, ErrNotFound) {
		t.Errorf("CachedAgent waited for the cache: %v", err)
	}

	// Counted in looks at the cache, not by the wall clock, which a loaded
	// machine stretches: timers never fire early, so an unknown id is
	// looked up at most once per recheck of the grace, and at least twice.
	const unknown = "9a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d"
	lagging.lists = 0
	if _, err := d.Agent(context.Background(), "org-a", id); err != nil {
		t.Fatal(err)
	}
	perLook := lagging.lists // found at the first look
	lagging.lists = 0
	start := time.Now()
	_, err := d.Agent(context.Background(), "org-a", unknown)
	took, looks := time.Since(start), lagging.lists/perLook
	if !errors.Is(err, ErrNotFound) || took < d.MissGrace || looks < 2 || looks > int(d.MissGrace/missRecheck)+1 {
		t.Errorf("an unknown agent_id: %v after %s and %d looks, want ErrNotFound after the %s grace, "+
			"looking every %s", err, took, looks, d.MissGrace, missRecheck)
	}
	const unknownEndpoint = "we_44444444444444444444444444444444"
	grace := d.MissGrace
	d.MissGrace, lagging.lists = -1, 0
	if _, err := d.Endpoint(context.Background(), "org-a", unknownEndpoint); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	oneLook := lagging.lists
	d.MissGrace, lagging.lists = grace, 0
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Endpoint(ctx, "org-a", unknownEndpoint); !errors.Is(err, ErrNotFound) || lagging.lists != oneLook {
		t.Errorf("a request gone away still waited: %v after %d lists, want one look (%d)", err, lagging.lists, oneLook)
	}
	if server.reads != 0 {
		t.Errorf("%d reads at the API server", server.reads)
	}
}
