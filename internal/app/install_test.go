package app_test

// The installation manifests: the Helm chart (config/helm/switchboard)
// passes `helm lint`, and what it renders, like dist/install.yaml
// (config/default), is accepted by a real apiserver in a server-side dry
// run: every object valid against its schema, every reference resolvable.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/devenv"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

const chartDir = "../../config/helm/switchboard"

// helmBinary is the pinned helm that `make test` installs and passes in
// SWITCHBOARD_HELM.
func helmBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SWITCHBOARD_HELM")
	if bin == "" {
		t.Fatal("SWITCHBOARD_HELM is not set: run `make test`, which installs the pinned helm")
	}
	return bin
}

func runTool(t *testing.T, stdin []byte, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s\n%s", filepath.Base(bin), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// chartValues are the installations the chart is checked in: the default
// (SQLite, local recordings, one replica) and production (PostgreSQL, S3,
// two replicas, organizations, monitoring off as its CRDs are absent).
var chartValues = map[string][]string{
	"default": nil,
	"production": {"--set", "replicas=2", "--set", "history.dsnSecret=switchboard-history",
		"--set", "recordings.store=s3", "--set", "recordings.s3.endpoint=s3.example.com",
		"--set", "recordings.s3.bucket=recordings", "--set", "recordings.s3.credentialsSecret=s3",
		"--set", "recordings.retention=2160h", "--set", "organizations={acme,globex}"},
	"sip-pod-services": sipPodServicesValues,
	"sip-host-network": {"--set", "workers.hostNetwork=true", "--set", "workers.maxActiveCallsPerReplica=50"},
}

// sipPodServicesValues are production with a UDP Service per pod and every
// flag the chart has a value for.
var sipPodServicesValues = []string{"--set", "replicas=2", "--set", "history.dsnSecret=switchboard-history",
	"--set", "recordings.store=s3", "--set", "recordings.s3.endpoint=s3.example.com",
	"--set", "recordings.s3.bucket=recordings", "--set", "recordings.s3.credentialsSecret=s3",
	"--set", "workers.podServices.enabled=true", "--set", "workers.podServices.tcp=true",
	"--set", "workers.maxActiveCallsPerReplica=100", "--set", "networkPolicy.sipFrom={203.0.113.0/24}",
	"--set", "workers.leaseDuration=20s", "--set", "workers.maxConcurrentReconciles=128",
	"--set", "api.maxPlacementsInFlight=-1", "--set", "api.requestTimeout=5s", "--set", "api.defaultRegion=GB",
	"--set", "calls.retention=30m", "--set", "calls.normalEvents=false", "--set", "speech.decoders=1",
	"--set", "sip.probeInterval=30s", "--set", "sip.ttsTimeout=5s", "--set", "webhooks.timeout=5s",
	"--set", "webhooks.disableAfter=-1s", "--set", "webhooks.deliveryRetention=72h",
	"--set", "leaderElectionLeaseDuration=15s", "--set", "kubeAPI.qps=200", "--set", "kubeAPI.burst=400",
	"--set", "logLevel=debug", "--set", "allowPrivateModelHosts={whisper.speech.svc.cluster.local,10.100.0.0/16}",
	"--set", "trustedProxies={10.0.0.0/8,192.0.2.7}", "--set", "recordings.maxBytes=64Mi",
	"--set", "quota.recordingStorage=50Gi", "--set", "sip.privateNetworks={10.20.0.0/16,192.168.7.0/24}"}

func TestHelmChartLintsAndAppliesServerSide(t *testing.T) {
	helm := helmBinary(t)
	kubectl := controlPlane.Kubectl(t)
	// A dry run cannot create the namespaces the objects go into.
	for _, ns := range []string{"switchboard-system", "acme", "globex"} {
		ensureNamespace(t, ns)
	}
	for name, values := range chartValues {
		t.Run(name, func(t *testing.T) {
			runTool(t, nil, helm, append([]string{"lint", "--strict", chartDir}, values...)...)
			rendered := runTool(t, nil, helm, append([]string{"template", "sb", chartDir, "--namespace",
				"switchboard-system", "--include-crds"}, values...)...)
			out := dryRunApply(t, kubectl, rendered)
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
	helm := helmBinary(t)
	cmd := exec.Command(helm, "template", "sb", chartDir, "--set", "replicas=2")
	out, err := cmd.CombinedOutput()
	g := NewWithT(t)
	g.Expect(err).To(HaveOccurred(), "two replicas on SQLite rendered:\n%s", out)
	g.Expect(string(out)).To(ContainSubstring("replicas > 1 needs the history store in PostgreSQL"))
}

func TestInstallYAMLAppliesServerSide(t *testing.T) {
	kubectl := controlPlane.Kubectl(t)
	ensureNamespace(t, "switchboard-system")
	// config/default is what `make build-installer` writes to
	// dist/install.yaml; the others are its PostgreSQL and production
	// (two replicas, S3) variants, and production on the nodes' networks.
	for _, dir := range []string{"default", "postgres", "production", "sip-host-network"} {
		t.Run(dir, func(t *testing.T) {
			rendered := kubectl.MustRun(t, "kustomize", "../../config/"+dir).Stdout
			rendered = strings.ReplaceAll(rendered, "image: controller:latest", "image: registry.example.com/switchboard:v0.1.0")
			out := dryRunApply(t, kubectl, []byte(rendered))
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

// dryRunApply applies manifests server-side without persisting them and
// returns kubectl's report.
func dryRunApply(t *testing.T, kubectl *testsupport.Kubectl, manifests []byte) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "manifests.yaml")
	NewWithT(t).Expect(os.WriteFile(f, manifests, 0o600)).To(Succeed())
	res := kubectl.Run(t, "apply", "--server-side", "--dry-run=server", "--force-conflicts", "-f", f)
	if res.ExitCode != 0 {
		t.Fatalf("server-side dry run refused:\n%s", res)
	}
	return res.Stdout
}

// ensureNamespace creates ns (a dry run checks that a namespaced object's
// namespace exists).
func ensureNamespace(t testing.TB, ns string) {
	t.Helper()
	err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// The FlowSchema config/default installs puts the operator's lease
// requests, and only those, in the apiserver's leader-election priority
// level: the apiserver names the schema and level that classified a
// request in the response's X-Kubernetes-PF-* headers.
func TestLeaseRequestsGoToTheLeaderElectionLevel(t *testing.T) {
	g := NewWithT(t)
	kubectl := controlPlane.Kubectl(t)
	ensureNamespace(t, devenv.LeaderElectionNamespace)
	var schema []byte
	for _, doc := range strings.Split(kubectl.MustRun(t, "kustomize", "../../config/default").Stdout, "\n---\n") {
		if strings.Contains(doc, "\nkind: FlowSchema\n") {
			schema = []byte(doc)
		}
	}
	g.Expect(schema).NotTo(BeEmpty(), "config/default installs no FlowSchema")
	f := filepath.Join(t.TempDir(), "flowschema.yaml")
	g.Expect(os.WriteFile(f, schema, 0o600)).To(Succeed())
	kubectl.MustRun(t, "apply", "--server-side", "-f", f)
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "switchboard-leader-election"}}
	testsupport.DeleteOnCleanup(t, k8s, fs)

	// The level exists (the schema is not dangling) and the apiserver has
	// taken the schema in.
	g.Eventually(func() metav1.ConditionStatus {
		_ = k8s.Get(context.Background(), client.ObjectKeyFromObject(fs), fs)
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				return metav1.ConditionStatus(c.Status)
			}
		}
		return ""
	}, 30*time.Second, 100*time.Millisecond).Should(Equal(metav1.ConditionFalse))
	lease := "/apis/coordination.k8s.io/v1/namespaces/" + devenv.LeaderElectionNamespace + "/leases/switchboard.dev"
	g.Eventually(func() string { return matchedFlowSchema(t, lease) }, 30*time.Second, 100*time.Millisecond).
		Should(Equal(string(fs.UID)), "the operator's lease request was not classified by %s", fs.Name)
	g.Expect(matchedFlowSchema(t, "/apis/switchboard.dev/v1alpha1/calls")).NotTo(Equal(string(fs.UID)),
		"the operator's other requests belong to their own level")
}

// matchedFlowSchema GETs path as the operator's service account and
// returns the UID of the FlowSchema the apiserver classified it by.
func matchedFlowSchema(t *testing.T, path string) string {
	t.Helper()
	httpc, err := rest.HTTPClientFor(managerConfig)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpc.Get(strings.TrimSuffix(managerConfig.Host, "/") + path)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)
}
