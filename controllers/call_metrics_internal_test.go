package controllers

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/quota"
)

// Each replica reports the calls its worker carries, and only the leader
// the unassigned ones every replica's cache holds: summed over the
// replicas, each call counts once.
func TestLiveCallsCountEachCallOnce(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := switchboardv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	call := func(name, worker string, phase switchboardv1.CallPhase) client.Object {
		c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: name}}
		if worker != "" {
			c.Labels = map[string]string{switchboardv1.WorkerLabel: worker}
		}
		c.Status.Phase = phase
		return c
	}
	// What both replicas' caches could hold (each holds its own and the
	// unassigned ones; the fake holds all, which the count must not mind).
	cache := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&switchboardv1.Call{}, quota.LivePhaseIndex, quota.LivePhase).
		WithObjects(call("a1", "a", switchboardv1.CallInProgress), call("a2", "a", switchboardv1.CallQueued),
			call("b1", "b", switchboardv1.CallInProgress), call("b2", "b", switchboardv1.CallInProgress),
			call("none", "", switchboardv1.CallQueued)).Build()
	leader := make(chan struct{})
	close(leader)
	replica := func(worker string, elected <-chan struct{}) *LiveCallsCollector {
		return &LiveCallsCollector{Cache: cache, Directory: &directory.Directory{Cache: cache, Live: cache, MissGrace: -1},
			Worker: worker, Leader: elected}
	}
	const help = "# HELP switchboard_calls_live Calls in progress (ringing or connected) now.\n" +
		"# TYPE switchboard_calls_live gauge\n" +
		"# HELP switchboard_calls_queued Calls accepted and not yet dialed, by the trunk they wait for (simulator: the simulated carrier).\n" +
		"# TYPE switchboard_calls_queued gauge\n"
	for _, tt := range []struct {
		name string
		c    *LiveCallsCollector
		want string
	}{
		{"the leader, worker a", replica("a", leader), "switchboard_calls_live 1\nswitchboard_calls_queued{trunk=\"unknown\"} 2\n"},
		{"a follower, worker b", replica("b", make(chan struct{})), "switchboard_calls_live 2\n"},
	} {
		if err := testutil.CollectAndCompare(tt.c, strings.NewReader(help+tt.want)); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}
