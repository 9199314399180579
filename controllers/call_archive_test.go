package controllers_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// A new leader meets the finished Calls a former leader archived: it finds
// them in the store as they are and does not write them again. Given a
// store without them (an archive that never landed), it writes each.
func TestNewLeaderArchivesOnlyWhatTheStoreLacks(t *testing.T) {
	suite.Need(t)
	ns, agentID := newCallOrganization(t)
	var calls []*switchboardv1.Call
	for _, name := range []string{"first", "second"} {
		testsupport.CreateCall(t, k8s, ns, name, agentID, "+14155550001")
	}
	for _, name := range []string{"first", "second"} {
		c := testsupport.WaitCallFinished(t, k8s, ns, name)
		waitArchived(t, c) // by the suite's reconciler: the former leader
		calls = append(calls, c)
	}

	t.Run("store has them", func(t *testing.T) {
		seen := newCountingStore(historyStore)
		startNewLeader(t, ns, seen)
		NewWithT(t).Eventually(func() int { return seen.versionReads(calls...) }, resWait, resPoll).
			Should(Equal(len(calls)), "the new leader never looked the calls up")
		NewWithT(t).Consistently(func() int { return seen.saves(calls...) }, time.Second, resPoll).
			Should(BeZero(), "calls archived as they are were written again")
	})

	t.Run("store lacks them", func(t *testing.T) {
		empty, err := history.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "history.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = empty.Close() })
		seen := newCountingStore(empty)
		startNewLeader(t, ns, seen)
		NewWithT(t).Eventually(func() int { return seen.saves(calls...) }, resWait, resPoll).
			Should(Equal(len(calls)), "calls missing from the store were not archived")
		for _, c := range calls {
			if _, err := empty.GetCall(context.Background(), ns, c.Status.CallID); err != nil {
				t.Errorf("call %s: %v", c.Name, err)
			}
		}
	})
}

// startNewLeader runs a second call reconciler, watching ns alone, with
// store as its history store, until the test ends: a leader taking over.
func startNewLeader(t *testing.T, ns string, store history.Store) {
	t.Helper()
	mgr, err := manager.New(controlPlane.Manager, manager.Options{
		Scheme: newScheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller: config.Controller{UsePriorityQueue: ptr.To(true), SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	recordings, err := recording.NewLocal(recording.LocalConfig{Dir: t.TempDir(), BaseURL: "http://127.0.0.1",
		SigningKey: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	if err := newCallReconciler(mgr, recordings, store, clock.RealClock{}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// countingStore counts, per call id, the saves and version reads made
// through it.
type countingStore struct {
	history.Store
	mu       sync.Mutex
	saved    map[string]int
	versions map[string]int
}

func newCountingStore(store history.Store) *countingStore {
	return &countingStore{Store: store, saved: map[string]int{}, versions: map[string]int{}}
}

// SaveCall counts the saves that succeeded.
func (s *countingStore) SaveCall(ctx context.Context, c *switchboardv1.Call) error {
	if err := s.Store.SaveCall(ctx, c); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saved[c.Status.CallID]++
	return nil
}

func (s *countingStore) CallVersion(ctx context.Context, namespace, id string) (string, error) {
	s.mu.Lock()
	s.versions[id]++
	s.mu.Unlock()
	return s.Store.CallVersion(ctx, namespace, id)
}

func (s *countingStore) saves(calls ...*switchboardv1.Call) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return countOf(s.saved, calls)
}

func (s *countingStore) versionReads(calls ...*switchboardv1.Call) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return countOf(s.versions, calls)
}

func countOf(counts map[string]int, calls []*switchboardv1.Call) int {
	n := 0
	for _, c := range calls {
		n += counts[c.Status.CallID]
	}
	return n
}
