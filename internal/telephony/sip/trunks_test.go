package sip

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

func trunkScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := switchboardv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A trunk applied a moment before the call is in the apiserver but not yet
// in the informer cache: the call goes out over it.
func TestClusterTrunksReadsATrunkTheCacheHasNotSeenYet(t *testing.T) {
	s := trunkScheme(t)
	cache := fake.NewClientBuilder().WithScheme(s).Build()
	live := fake.NewClientBuilder().WithScheme(s).WithObjects(trunkObject("sip:carrier.example:5060", "")).Build()

	tr, _, err := ClusterTrunks{Cache: cache, Live: live}.Trunk(context.Background(), "org-a", "carrier")
	if err != nil {
		t.Fatalf("Trunk: %v", err)
	}
	if tr.Address != "sip:carrier.example:5060" {
		t.Errorf("address = %q, want the live trunk's", tr.Address)
	}
}

func TestClusterTrunksRefusesATrunkThatDoesNotExist(t *testing.T) {
	s := trunkScheme(t)
	empty := fake.NewClientBuilder().WithScheme(s).Build()
	_, _, err := ClusterTrunks{Cache: empty, Live: empty}.Trunk(context.Background(), "org-a", "carrier")
	var de *telephony.DispatchError
	if !errors.As(err, &de) || de.Code != telephony.CodeDispatchFailed {
		t.Fatalf("err = %v, want a dispatch_failed DispatchError", err)
	}
}
