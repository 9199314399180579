package operations_test

// The installation manifests: the Helm chart (config/helm/switchboard)
// passes `helm lint`, and what it renders, like dist/install.yaml
// (config/default), is accepted by a real apiserver in a server-side dry
// run: every object valid against its schema, every reference resolvable.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/devenv"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

func TestHelmChartLintsAndAppliesServerSide(t *testing.T) {
	helm := HelmBinary(t)
	kubectl := ControlPlane.Kubectl(t)
	// A dry run cannot create the namespaces the objects go into.
	for _, ns := range []string{"switchboard-system", "acme", "globex"} {
		EnsureNamespace(t, ns)
	}
	for name, values := range ChartValues {
		t.Run(name, func(t *testing.T) {
			RunTool(t, nil, helm, append([]string{"lint", "--strict", ChartDir}, values...)...)
			rendered := RunTool(t, nil, helm, append([]string{"template", "sb", ChartDir, "--namespace",
				"switchboard-system", "--include-crds"}, values...)...)
			out := DryRunApply(t, kubectl, rendered)
			workload := "deployment.apps/sb-switchboard-manager"
			if name == "sip-pod-services" {
				workload = "statefulset.apps/sb-switchboard-manager"
			}
			for _, kind := range []string{"customresourcedefinition", workload,
				"clusterrole.rbac.authorization.k8s.io/sb-switchboard-manager", "validatingadmissionpolicy",
				"networkpolicy", "flowschema.flowcontrol.apiserver.k8s.io/sb-switchboard-leader-election"} {
				NewWithT(t).Expect(out).To(ContainSubstring(kind), "rendered chart lacks %s", kind)
			}
			if name == "sip-pod-services" {
				NewWithT(t).Expect(out).To(And(ContainSubstring("service/sb-switchboard-manager-0"),
					ContainSubstring("service/sb-switchboard-manager-1")))
			}
			if name == "production" {
				NewWithT(t).Expect(out).To(And(ContainSubstring("poddisruptionbudget.policy/sb-switchboard-manager"),
					ContainSubstring("rolebinding.rbac.authorization.k8s.io/sb-switchboard-organization")))
			}
		})
	}
}

func TestHelmChartRefusesReplicasWithoutSharedStores(t *testing.T) {
	helm := HelmBinary(t)
	cmd := exec.Command(helm, "template", "sb", ChartDir, "--set", "replicas=2")
	out, err := cmd.CombinedOutput()
	g := NewWithT(t)
	g.Expect(err).To(HaveOccurred(), "two replicas on SQLite rendered:\n%s", out)
	g.Expect(string(out)).To(ContainSubstring("replicas > 1 needs the history store in PostgreSQL"))
}

func TestInstallYAMLAppliesServerSide(t *testing.T) {
	kubectl := ControlPlane.Kubectl(t)
	EnsureNamespace(t, "switchboard-system")
	// config/default is what `make build-installer` writes to
	// dist/install.yaml; the others are its PostgreSQL and production
	// (two replicas, S3) variants, and production on the nodes' networks.
	for _, dir := range []string{"default", "postgres", "production", "sip-host-network"} {
		t.Run(dir, func(t *testing.T) {
			rendered := kubectl.MustRun(t, "kustomize", filepath.Join(RepoRoot, "config", dir)).Stdout
			rendered = strings.ReplaceAll(rendered, "image: controller:latest", "image: registry.example.com/switchboard:v0.1.0")
			out := DryRunApply(t, kubectl, []byte(rendered))
			NewWithT(t).Expect(out).To(And(ContainSubstring("deployment.apps/switchboard-manager"),
				ContainSubstring("validatingadmissionpolicy.admissionregistration.k8s.io/switchboard-call-source"),
				ContainSubstring("networkpolicy.networking.k8s.io/switchboard-manager"),
				ContainSubstring("flowschema.flowcontrol.apiserver.k8s.io/switchboard-leader-election")))
			if dir == "production" || dir == "sip-host-network" {
				NewWithT(t).Expect(out).To(ContainSubstring("poddisruptionbudget.policy/switchboard-manager"))
			}
			if dir == "sip-host-network" {
				NewWithT(t).Expect(out).To(ContainSubstring("clusterrolebinding.rbac.authorization.k8s.io/switchboard-node-address"))
				NewWithT(t).Expect(rendered).To(And(ContainSubstring("hostNetwork: true"), ContainSubstring("- --sip-external-node=$(NODE_NAME)"),
					ContainSubstring("- --rtp-ports=20000-20199")))
			}
		})
	}
}

// The FlowSchema config/default installs puts the operator's lease
// requests, and only those, in the apiserver's leader-election priority
// level: the apiserver names the schema and level that classified a
// request in the response's X-Kubernetes-PF-* headers.
func TestLeaseRequestsGoToTheLeaderElectionLevel(t *testing.T) {
	g := NewWithT(t)
	kubectl := ControlPlane.Kubectl(t)
	EnsureNamespace(t, devenv.LeaderElectionNamespace)
	var schema []byte
	for _, doc := range strings.Split(kubectl.MustRun(t, "kustomize", filepath.Join(RepoRoot, "config", "default")).Stdout, "\n---\n") {
		if strings.Contains(doc, "\nkind: FlowSchema\n") {
			schema = []byte(doc)
		}
	}
	g.Expect(schema).NotTo(BeEmpty(), "config/default installs no FlowSchema")
	f := filepath.Join(t.TempDir(), "flowschema.yaml")
	g.Expect(os.WriteFile(f, schema, 0o600)).To(Succeed())
	kubectl.MustRun(t, "apply", "--server-side", "-f", f)
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "switchboard-leader-election"}}
	testsupport.DeleteOnCleanup(t, K8s, fs)

	// The level exists (the schema is not dangling) and the apiserver has
	// taken the schema in.
	g.Eventually(func() metav1.ConditionStatus {
		_ = K8s.Get(context.Background(), client.ObjectKeyFromObject(fs), fs)
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				return metav1.ConditionStatus(c.Status)
			}
		}
		return ""
	}, 30*time.Second, 100*time.Millisecond).Should(Equal(metav1.ConditionFalse))
	lease := "/apis/coordination.k8s.io/v1/namespaces/" + devenv.LeaderElectionNamespace + "/leases/switchboard.dev"
	g.Eventually(func() string { return MatchedFlowSchema(t, lease) }, 30*time.Second, 100*time.Millisecond).
		Should(Equal(string(fs.UID)), "the operator's lease request was not classified by %s", fs.Name)
	g.Expect(MatchedFlowSchema(t, "/apis/switchboard.dev/v1alpha1/calls")).NotTo(Equal(string(fs.UID)),
		"the operator's other requests belong to their own level")
}
