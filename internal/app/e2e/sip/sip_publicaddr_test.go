package sip_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/devenv"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/publicaddr"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// A pod behind a LoadBalancer Service of its own (--sip-external-service)
// announces the balancer's address, read with Switchboard's own identity
// (config/rbac's leader-election Role lets it read Services in its
// namespace, and nowhere else): the address appears once the cloud has
// provisioned it, a host name is resolved, and a Service that is missing or
// out of reach fails at once with its name.
func TestSIPExternalServiceAddress(t *testing.T) {
	ns := devenv.LeaderElectionNamespace
	EnsureNamespace(t, ns)
	manager, err := client.New(ManagerConfig, client.Options{Scheme: app.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	lb := func(name string, mutate func(*corev1.Service)) types.NamespacedName {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "sip", Protocol: corev1.ProtocolUDP, Port: 5060}}}}
		if mutate != nil {
			mutate(svc)
		}
		NewWithT(t).Expect(K8s.Create(context.Background(), svc)).To(Succeed())
		testsupport.DeleteOnCleanup(t, K8s, svc)
		return client.ObjectKeyFromObject(svc)
	}
	setIngress := func(key types.NamespacedName, in corev1.LoadBalancerIngress) {
		var svc corev1.Service
		NewWithT(t).Expect(K8s.Get(context.Background(), key, &svc)).To(Succeed())
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{in}
		NewWithT(t).Expect(K8s.Status().Update(context.Background(), &svc)).To(Succeed())
	}

	t.Run("the balancer's IP once provisioned", func(t *testing.T) {
		key := lb("sb-sip-0", nil)
		got := make(chan string, 1)
		go func() {
			addr, err := publicaddr.FromService(context.Background(), manager, key, time.Minute)
			if err != nil {
				t.Error(err)
			}
			got <- addr
		}()
		setIngress(key, corev1.LoadBalancerIngress{IP: "198.51.100.20"})
		NewWithT(t).Expect(<-got).To(Equal("198.51.100.20"))
	})
	t.Run("a host name, resolved", func(t *testing.T) {
		key := lb("sb-sip-1", nil)
		setIngress(key, corev1.LoadBalancerIngress{Hostname: "localhost"})
		addr, err := publicaddr.FromService(context.Background(), manager, key, time.Minute)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(addr).To(Equal("127.0.0.1"))
	})
	t.Run("external IPs first", func(t *testing.T) {
		key := lb("sb-sip-2", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"192.0.2.9"} })
		addr, err := publicaddr.FromService(context.Background(), manager, key, time.Minute)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(addr).To(Equal("192.0.2.9"))
	})
	t.Run("never provisioned", func(t *testing.T) {
		key := lb("sb-sip-3", nil)
		_, err := publicaddr.FromService(context.Background(), manager, key, 1500*time.Millisecond)
		NewWithT(t).Expect(err).To(MatchError(And(ContainSubstring(key.String()), ContainSubstring("LoadBalancer Services, with UDP"))))
	})
	t.Run("missing", func(t *testing.T) {
		key := types.NamespacedName{Namespace: ns, Name: "sb-sip-none"}
		_, err := publicaddr.FromService(context.Background(), manager, key, 30*time.Second)
		NewWithT(t).Expect(err).To(MatchError(And(ContainSubstring(key.String()), ContainSubstring("not found"))))
	})
	t.Run("outside the manager's namespace", func(t *testing.T) {
		key := types.NamespacedName{Namespace: ControlPlane.NewNamespace(t, "elsewhere"), Name: "sip"}
		_, err := publicaddr.FromService(context.Background(), manager, key, 30*time.Second)
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring("forbidden")))
	})
}

// A pod on the host network of a cloud node announces the node's
// ExternalIP (--sip-external-node), which the cloud translates 1:1 to the
// interface's address the pod binds; a node that reports none leaves the
// bound address announced.
func TestSIPExternalNodeAddress(t *testing.T) {
	g := NewWithT(t)
	node := func(name string, addrs ...corev1.NodeAddress) string {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		g.Expect(K8s.Create(context.Background(), n)).To(Succeed())
		testsupport.DeleteOnCleanup(t, K8s, n)
		n.Status.Addresses = addrs
		g.Expect(K8s.Status().Update(context.Background(), n)).To(Succeed())
		return name
	}
	internal := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}
	cloud := node("sip-node-cloud", internal, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "198.51.100.30"})
	addr, err := publicaddr.FromNode(context.Background(), K8s, cloud)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(addr).To(Equal("198.51.100.30"))

	bare := node("sip-node-bare", internal)
	addr, err = publicaddr.FromNode(context.Background(), K8s, bare)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(addr).To(BeEmpty())

	_, err = publicaddr.FromNode(context.Background(), K8s, "sip-node-none")
	g.Expect(err).To(MatchError(And(ContainSubstring("sip-node-none"), ContainSubstring("not found"))))
}
