package operations_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// With workers.podServices each pod is a StatefulSet's, reached through a
// UDP Service of its own that lists its SIP port and every RTP port, and
// announces that Service's address; the chart's values for the binary's
// flags reach its arguments.
func TestHelmChartSIPServicePerPod(t *testing.T) {
	g := NewWithT(t)
	objs := RenderedChart(t, SIPPodServicesValues...)
	sts := Decode[appsv1.StatefulSet](t, objs, "StatefulSet/sb-switchboard-manager")
	g.Expect(sts.Spec.PodManagementPolicy).To(Equal(appsv1.ParallelPodManagement))
	c := sts.Spec.Template.Spec.Containers[0]
	g.Expect(c.Args).To(ContainElements("--sip-port=5060", "--rtp-ports=20000-20199",
		"--sip-external-service=$(POD_NAMESPACE)/$(POD_NAME)", "--max-active-calls-per-replica=100",
		"--worker-lease-duration=20s", "--max-concurrent-calls=128", "--max-placements-in-flight=-1",
		"--api-request-timeout=5s", "--default-region=GB", "--call-retention=30m", "--call-normal-events=false",
		"--speech-decoders=1", "--sip-probe-interval=30s", "--tts-timeout=5s", "--webhook-timeout=5s",
		"--webhook-disable-after=-1s", "--webhook-delivery-retention=72h", "--leader-elect-lease-duration=15s",
		"--kube-api-qps=200", "--kube-api-burst=400", "--zap-log-level=debug",
		"--allow-private-model-hosts=whisper.speech.svc.cluster.local,10.100.0.0/16",
		"--sip-private-networks=10.20.0.0/16,192.168.7.0/24"))
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	g.Expect(env).To(And(HaveKeyWithValue("POD_NAME", "metadata.name"), HaveKeyWithValue("POD_NAMESPACE", "metadata.namespace")))
	g.Expect(c.StartupProbe).NotTo(BeNil(), "the wait for the Service's address would fail the liveness probe")

	for _, pod := range []string{"sb-switchboard-manager-0", "sb-switchboard-manager-1"} {
		svc := Decode[corev1.Service](t, objs, "Service/"+pod)
		g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
		g.Expect(svc.Spec.ExternalTrafficPolicy).To(Equal(corev1.ServiceExternalTrafficPolicyLocal))
		g.Expect(svc.Spec.Selector).To(HaveKeyWithValue("statefulset.kubernetes.io/pod-name", pod))
		var udp []int32
		for _, p := range svc.Spec.Ports {
			g.Expect(p.TargetPort).To(Equal(intstr.FromInt32(p.Port)), "the balancer's ports are the pod's: the pod announces them")
			if p.Protocol == corev1.ProtocolUDP {
				udp = append(udp, p.Port)
			}
		}
		want := []int32{5060}
		for p := int32(20000); p <= 20199; p++ {
			want = append(want, p)
		}
		g.Expect(udp).To(Equal(want), "%s: SIP and every RTP and RTCP port, over UDP", pod)
		g.Expect(svc.Spec.Ports).To(ContainElement(HaveField("Protocol", corev1.ProtocolTCP)), "podServices.tcp")
	}
	g.Expect(objs).NotTo(HaveKey("Service/sb-switchboard-manager-2"))

	policy := Decode[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy/sb-switchboard-manager")
	g.Expect(policy.Spec.Ingress).To(ContainElement(And(
		HaveField("From", ConsistOf(HaveField("IPBlock.CIDR", "203.0.113.0/24"))),
		HaveField("Ports", ContainElement(And(HaveField("Port", PointTo(Equal(intstr.FromInt32(20000)))),
			HaveField("EndPort", PointTo(Equal(int32(20199))))))))))
	role := Decode[rbacv1.Role](t, objs, "Role/sb-switchboard-leader-election")
	g.Expect(role.Rules).To(ContainElement(And(HaveField("Resources", ConsistOf("services")), HaveField("Verbs", ConsistOf("get")))))

	// By default: a Deployment on the pod network, SIP and RTP on
	// ephemeral ports, no Services for SIP and no read of Services.
	objs = RenderedChart(t)
	dep := Decode[appsv1.Deployment](t, objs, "Deployment/sb-switchboard-manager")
	g.Expect(slices.ContainsFunc(dep.Spec.Template.Spec.Containers[0].Args, func(a string) bool {
		return strings.HasPrefix(a, "--sip-") || strings.HasPrefix(a, "--rtp-")
	})).To(BeFalse(), "args %v", dep.Spec.Template.Spec.Containers[0].Args)
	g.Expect(objs).NotTo(HaveKey("Service/sb-switchboard-manager-0"))
	role = Decode[rbacv1.Role](t, objs, "Role/sb-switchboard-leader-election")
	g.Expect(role.Rules).NotTo(ContainElement(HaveField("Resources", ContainElement("services"))))
}

// Values that cannot work are refused at render time with what to change.
func TestHelmChartRefusesSIPNetworkThatCannotWork(t *testing.T) {
	for _, tc := range []struct{ values, want string }{
		{"workers.hostNetwork=true,workers.podServices.enabled=true,workers.maxActiveCallsPerReplica=50",
			"choose one way carriers reach the pods"},
		{"workers.hostNetwork=true", "workers.maxActiveCallsPerReplica must be set"},
		{"workers.hostNetwork=true,workers.maxActiveCallsPerReplica=150", "workers.rtpPorts.count 200 holds 100 calls"},
		{"workers.hostNetwork=true,workers.maxActiveCallsPerReplica=50,workers.rtpPorts.first=20001", "must be even"},
		{"workers.podServices.enabled=true,workers.maxActiveCallsPerReplica=50", "networkPolicy.sipFrom"},
	} {
		out, err := exec.Command(HelmBinary(t), "template", "sb", ChartDir, "--set", tc.values).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("--set %s: %v, want a refusal saying %q:\n%.400s", tc.values, err, tc.want, out)
		}
	}
}

// With workers.hostNetwork each pod is on its node's network, with the
// fixed ports declared (the scheduler puts one per node), and announces
// the node's ExternalIP, which a ClusterRole lets it read.
func TestHelmChartSIPHostNetwork(t *testing.T) {
	g := NewWithT(t)
	objs := RenderedChart(t, "--set", "workers.hostNetwork=true", "--set", "workers.maxActiveCallsPerReplica=50")
	dep := Decode[appsv1.Deployment](t, objs, "Deployment/sb-switchboard-manager")
	pod := dep.Spec.Template.Spec
	g.Expect(pod.HostNetwork).To(BeTrue())
	g.Expect(pod.Containers[0].Args).To(ContainElements("--sip-port=5060", "--rtp-ports=20000-20199",
		"--sip-external-node=$(NODE_NAME)"))
	g.Expect(pod.Containers[0].Env).To(ContainElement(And(HaveField("Name", "NODE_NAME"),
		HaveField("ValueFrom.FieldRef.FieldPath", "spec.nodeName"))))
	g.Expect(pod.Containers[0].Ports).To(ContainElement(And(HaveField("ContainerPort", int32(5060)),
		HaveField("Protocol", corev1.ProtocolUDP))))
	role := Decode[rbacv1.ClusterRole](t, objs, "ClusterRole/sb-switchboard-node-address")
	g.Expect(role.Rules).To(ConsistOf(And(HaveField("Resources", ConsistOf("nodes")), HaveField("Verbs", ConsistOf("get")))))
	g.Expect(objs).To(HaveKey("ClusterRoleBinding/sb-switchboard-node-address"))
	g.Expect(RenderedChart(t)).NotTo(HaveKey("ClusterRole/sb-switchboard-node-address"))
}
