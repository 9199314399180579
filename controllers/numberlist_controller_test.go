package controllers_test

// The NumberList reconciler: the count of entries and the Ready condition.

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

func TestNumberListStatus(t *testing.T) {
	suite.Need(t)
	ns := newOrganization(t)
	ctx := context.Background()
	lists := []*switchboardv1.NumberList{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mixed"}, Spec: switchboardv1.NumberListSpec{
			Type: switchboardv1.DoNotCall, Numbers: []string{"+14155550199", "+14155550198", "+442071838750"},
			Prefixes: []string{"+1900", "+1976"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prefixes-only"}, Spec: switchboardv1.NumberListSpec{
			Type: switchboardv1.Blocked, Prefixes: []string{"+1900"}}},
	}
	for _, l := range lists {
		NewWithT(t).Expect(k8s.Create(ctx, l)).To(Succeed())
	}
	for _, l := range lists {
		t.Run(l.Name, func(t *testing.T) {
			g := NewWithT(t)
			want := len(l.Spec.Numbers) + len(l.Spec.Prefixes)
			g.Eventually(func(g Gomega) {
				var cur switchboardv1.NumberList
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(l), &cur)).To(Succeed())
				g.Expect(cur.Status.Entries).To(Equal(want))
				g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
				ready := testsupport.Ready(g, cur.Status.Conditions)
				g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(ready.Reason).To(Equal(switchboardv1.ReasonReconciled))
			}, resWait, resPoll).Should(Succeed())
		})
	}

	// An edit is reflected in the count.
	g := NewWithT(t)
	var cur switchboardv1.NumberList
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(lists[1]), &cur)).To(Succeed())
	cur.Spec.Numbers = []string{"+14155550100"}
	g.Expect(k8s.Update(ctx, &cur)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(lists[1]), &cur)).To(Succeed())
		g.Expect(cur.Status.Entries).To(Equal(2))
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
	}, resWait, resPoll).Should(Succeed())
}
