package testsupport

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// FakeCache is a client holding objs, Switchboard's kinds known, standing
// in for the manager's cache in tests of what reads it.
func FakeCache(t testing.TB, objs ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := switchboardv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&switchboardv1.Call{}, "status.callID", SelectableCallID).Build()
}

// SelectableCallID is the Call's field selector status.callID (the CRD's
// selectableFields), for a fake client standing in for the apiserver.
func SelectableCallID(o client.Object) []string {
	return []string{o.(*switchboardv1.Call).Status.CallID}
}
