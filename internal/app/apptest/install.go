package apptest

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

	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// ChartDir is the Helm chart.
var ChartDir = filepath.Join(RepoRoot, "config", "helm", "switchboard")

// HelmBinary is the pinned helm that `make test` installs and passes in
// SWITCHBOARD_HELM.
func HelmBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SWITCHBOARD_HELM")
	if bin == "" {
		t.Fatal("SWITCHBOARD_HELM is not set: run `make test`, which installs the pinned helm")
	}
	return bin
}

func RunTool(t *testing.T, stdin []byte, bin string, args ...string) []byte {
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

// ChartValues are the installations the chart is checked in: the default
// (SQLite, local recordings, one replica) and production (PostgreSQL, S3,
// two replicas, organizations, monitoring off as its CRDs are absent).
var ChartValues = map[string][]string{
	"default": nil,
	"production": {"--set", "replicas=2", "--set", "history.dsnSecret=switchboard-history",
		"--set", "recordings.store=s3", "--set", "recordings.s3.endpoint=s3.example.com",
		"--set", "recordings.s3.bucket=recordings", "--set", "recordings.s3.credentialsSecret=s3",
		"--set", "recordings.retention=2160h", "--set", "organizations={acme,globex}"},
	"sip-pod-services": SIPPodServicesValues,
	"sip-host-network": {"--set", "workers.hostNetwork=true", "--set", "workers.maxActiveCallsPerReplica=50"},
}

// SIPPodServicesValues are production with a UDP Service per pod and every
// flag the chart has a value for.
var SIPPodServicesValues = []string{"--set", "replicas=2", "--set", "history.dsnSecret=switchboard-history",
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

// DryRunApply applies manifests server-side without persisting them and
// returns kubectl's report.
func DryRunApply(t *testing.T, kubectl *testsupport.Kubectl, manifests []byte) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "manifests.yaml")
	NewWithT(t).Expect(os.WriteFile(f, manifests, 0o600)).To(Succeed())
	res := kubectl.Run(t, "apply", "--server-side", "--dry-run=server", "--force-conflicts", "-f", f)
	if res.ExitCode != 0 {
		t.Fatalf("server-side dry run refused:\n%s", res)
	}
	return res.Stdout
}

// EnsureNamespace creates ns (a dry run checks that a namespaced object's
// namespace exists).
func EnsureNamespace(t testing.TB, ns string) {
	t.Helper()
	err := K8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// MatchedFlowSchema GETs path as the operator's service account and
// returns the UID of the FlowSchema the apiserver classified it by.
func MatchedFlowSchema(t *testing.T, path string) string {
	t.Helper()
	httpc, err := rest.HTTPClientFor(ManagerConfig)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpc.Get(strings.TrimSuffix(ManagerConfig.Host, "/") + path)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)
}
