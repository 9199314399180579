package apptest

// Limits that keep one organization from hurting the others: the defaults
// of the binary's flags, the endpoint limit, and the same limits for
// Calls and endpoints applied with kubectl.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/app"
)

// loadCallSourcePolicy reads config/policy/call_source.yaml.
// platformEngineerUnderCallSourcePolicy installs the admission policy of
// config/policy/call_source.yaml for the test and returns a client acting
// as a platform engineer (a cluster admin, not Switchboard's manager).
func PlatformEngineerUnderCallSourcePolicy(t *testing.T) client.Client {
	t.Helper()
	g, ctx := NewWithT(t), context.Background()
	policy, binding := LoadCallSourcePolicy(t)
	g.Expect(K8s.Create(ctx, policy)).To(Succeed())
	t.Cleanup(func() { _ = K8s.Delete(ctx, policy) })
	g.Expect(K8s.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = K8s.Delete(ctx, binding) })

	cfg := rest.CopyConfig(RestConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "platform-engineer", Groups: []string{"system:masters"}}
	kubectl, err := client.New(cfg, client.Options{Scheme: app.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	return kubectl
}

func LoadCallSourcePolicy(t *testing.T) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(RepoRoot, "config", "policy", "call_source.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	docs := strings.Split(string(raw), "\n---\n")
	NewWithT(t).Expect(docs).To(HaveLen(2))
	policy, binding := &admissionv1.ValidatingAdmissionPolicy{}, &admissionv1.ValidatingAdmissionPolicyBinding{}
	NewWithT(t).Expect(yaml.Unmarshal([]byte(docs[0]), policy)).To(Succeed())
	NewWithT(t).Expect(yaml.Unmarshal([]byte(docs[1]), binding)).To(Succeed())
	// kustomize's namePrefix names them switchboard-...; the binding
	// already refers to the prefixed name.
	policy.Name = binding.Spec.PolicyName
	binding.Name = "switchboard-" + binding.Name
	return policy, binding
}
