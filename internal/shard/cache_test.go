package shard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/shard"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

var cp *testsupport.ControlPlane

func TestMain(m *testing.M) {
	if testsupport.SkipSuiteIfShort("a control plane (envtest)") {
		return
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if cp, err = testsupport.StartControlPlane(filepath.Join("..", ".."), scheme()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	return m.Run()
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, switchboardv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

func newCall(t *testing.T, ns, name, worker string) *switchboardv1.Call {
	t.Helper()
	c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: switchboardv1.CallSpec{AgentID: "0b9c7c9e-3b7e-4a53-9c43-5d2f1f3c1a01", ToNumber: "+14155551234"}}
	if worker != "" {
		c.Labels = map[string]string{switchboardv1.WorkerLabel: worker}
	}
	if err := cp.Client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

func assign(t *testing.T, c *switchboardv1.Call, worker string) {
	t.Helper()
	before := c.DeepCopy()
	c.Labels = map[string]string{switchboardv1.WorkerLabel: worker}
	if err := cp.Client.Patch(context.Background(), c, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// names lists the Calls of ns the cache holds.
func names(g gomega.Gomega, c cache.Cache, ns string, opts ...client.ListOption) []string {
	var list switchboardv1.CallList
	g.Expect(c.List(context.Background(), &list, append(opts, client.InNamespace(ns))...)).To(gomega.Succeed())
	var out []string
	for _, call := range list.Items {
		out = append(out, call.Name)
	}
	slices.Sort(out)
	return out
}

// events records what a handler of the cache's Call informer heard.
type events struct {
	mu             sync.Mutex
	added, deleted []string
}

func (e *events) record(to *[]string) func(obj any) {
	return func(obj any) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		*to = append(*to, obj.(*switchboardv1.Call).Name)
	}
}

func (e *events) get() (added, deleted []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.added), slices.Clone(e.deleted)
}

// A worker's cache holds its own Calls and the unassigned ones, never
// another worker's; a Call assigned away leaves it, one assigned to it
// stays in it, and a handler of its Call informer hears both sides.
func TestCacheHoldsOwnAndUnassignedCalls(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := cp.NewNamespace(t, "shard-")
	newCall(t, ns, "mine", "w1")
	newCall(t, ns, "theirs", "w2")
	away := newCall(t, ns, "away", "")
	toMe := newCall(t, ns, "to-me", "")

	c, err := shard.NewCache("w1")(cp.Manager, cache.Options{Scheme: scheme()})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(c.IndexField(ctx, &switchboardv1.Call{}, "name", func(o client.Object) []string {
		return []string{o.GetName()}
	})).To(gomega.Succeed())
	informer, err := c.GetInformer(ctx, &switchboardv1.Call{}, cache.BlockUntilSynced(false))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var heard events
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: heard.record(&heard.added), DeleteFunc: heard.record(&heard.deleted)})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	g.Expect(c.WaitForCacheSync(ctx)).To(gomega.BeTrue())
	g.Eventually(reg.HasSynced).Should(gomega.BeTrue())

	g.Expect(names(g, c, ns)).To(gomega.Equal([]string{"away", "mine", "to-me"}))
	err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "theirs"}, &switchboardv1.Call{})
	g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "another worker's Call: %v", err)
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "away"}, &switchboardv1.Call{})).To(gomega.Succeed())
	g.Expect(names(g, c, ns, client.MatchingFields{"name": "away"})).To(gomega.Equal([]string{"away"}))
	g.Expect(names(g, c, ns, client.Limit(2))).To(gomega.HaveLen(2))

	assign(t, away, "w2")
	assign(t, toMe, "w1")
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(names(g, c, ns)).To(gomega.Equal([]string{"mine", "to-me"}))
	}).WithTimeout(10 * time.Second).Should(gomega.Succeed())
	g.Expect(names(g, c, ns, client.MatchingFields{"name": "to-me"})).To(gomega.Equal([]string{"to-me"}))
	g.Eventually(func(g gomega.Gomega) {
		added, deleted := heard.get()
		g.Expect(added).To(gomega.ConsistOf("mine", "away", "to-me", "to-me"))
		g.Expect(deleted).To(gomega.ConsistOf("away", "to-me"))
	}).WithTimeout(10 * time.Second).Should(gomega.Succeed())

	cancel()
	g.Expect(<-done).To(gomega.Succeed())
}

// A worker name that is no label value is refused, rather than making a
// selector of nothing, which would cache every Call.
func TestCacheRefusesAWorkerNameThatIsNoLabelValue(t *testing.T) {
	for _, name := range []string{"", "a name", strings.Repeat("x", 64)} {
		if _, err := shard.NewCache(name)(cp.Manager, cache.Options{Scheme: scheme()}); err == nil {
			t.Errorf("NewCache(%q): no error", name)
		}
	}
}
