package testsupport

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubectl runs the real kubectl binary of the envtest assets against the
// control plane, as its administrator: what a platform team or an operator
// on call types.
type Kubectl struct {
	bin        string
	kubeconfig string
	cacheDir   string
}

// Kubectl writes an administrator's kubeconfig for the control plane into a
// temporary folder of t.
func (cp *ControlPlane) Kubectl(t testing.TB) *Kubectl {
	t.Helper()
	bin := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	if _, err := os.Stat(bin); err != nil { //nolint:gosec // the kubectl of the envtest assets `make test` installs
		t.Fatalf("no kubectl in KUBEBUILDER_ASSETS: %v", err)
	}
	dir := t.TempDir()
	admin := cp.Admin
	server := admin.Host
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: server,
		CertificateAuthorityData: admin.CAData, CertificateAuthority: admin.CAFile}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: admin.CertData, ClientKeyData: admin.KeyData,
		ClientCertificate: admin.CertFile, ClientKey: admin.KeyFile, Token: admin.BearerToken}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	cfg.CurrentContext = "envtest"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("writing kubeconfig: %v", err)
	}
	return &Kubectl{bin: bin, kubeconfig: path, cacheDir: filepath.Join(dir, "cache")}
}

// KubectlResult is one kubectl invocation.
type KubectlResult struct {
	Args           []string
	Stdout, Stderr string
	ExitCode       int
}

func (r KubectlResult) String() string {
	return "kubectl " + strings.Join(r.Args, " ") + "\n--- stdout:\n" + r.Stdout + "--- stderr:\n" + r.Stderr
}

// Run executes kubectl with args and returns what it printed and its exit
// code.
func (k *Kubectl) Run(t testing.TB, args ...string) KubectlResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := append([]string{"--cache-dir=" + k.cacheDir, "--request-timeout=20s"}, args...)
	cmd := exec.CommandContext(ctx, k.bin, full...) //nolint:gosec // the envtest assets' kubectl, with the test's arguments
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := KubectlResult{Args: args, Stdout: stdout.String(), Stderr: stderr.String()}
	if err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			t.Fatalf("running kubectl %v: %v", args, err)
		}
		res.ExitCode = exitErr.ExitCode()
	}
	return res
}

// MustRun runs kubectl and fails t unless it exits 0.
func (k *Kubectl) MustRun(t testing.TB, args ...string) KubectlResult {
	t.Helper()
	res := k.Run(t, args...)
	if res.ExitCode != 0 {
		t.Fatalf("exit code %d:\n%s", res.ExitCode, res)
	}
	return res
}

// Apply writes manifest to a file and runs `kubectl apply -n ns -f file`.
func (k *Kubectl) Apply(t testing.TB, ns, manifest string) KubectlResult {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "manifest-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(manifest); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return k.Run(t, "apply", "-n", ns, "-f", f.Name())
}
