package restapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// TestLargeDoNotCallList applies a do-not-call list of 100,000 numbers (the
// most a NumberList takes, and about what one etcd object holds) through the
// real apiserver and checks that it is enforced within seconds: the last
// number is refused, a neighbour is not.
func TestLargeDoNotCallList(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	numbers := make([]string, 100_000)
	for i := range numbers {
		numbers[i] = fmt.Sprintf("+16462%06d", i)
	}
	CreateNumberList(t, o.Ns, "large-dnc", switchboardv1.DoNotCall, numbers, nil)
	WaitRefused(t, o, numbers[len(numbers)-1], "dnc_blocked")

	allowed := Do(t, "POST", "/v1/calls", o.Key, o.CallBody("+16463000000", nil))
	g.Expect(allowed.Status).To(Equal(http.StatusCreated), string(allowed.Raw))

	var list switchboardv1.NumberList
	g.Eventually(func() int {
		g.Expect(K8s.Get(context.Background(), client.ObjectKey{Namespace: o.Ns, Name: "large-dnc"}, &list)).To(Succeed())
		return list.Status.Entries
	}, 10*time.Second, 50*time.Millisecond).Should(Equal(len(numbers)))
}
