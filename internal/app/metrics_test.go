package app_test

// In a cluster the metrics are served over HTTPS to callers the apiserver
// authenticates (a ServiceAccount token) and authorizes (the
// metrics-reader ClusterRole of config/rbac): no one else reads them.

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

func TestSecureMetricsNeedAnAuthorizedToken(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	addr := fmt.Sprintf("127.0.0.1:%d", testsupport.FreePort(t, "tcp"))
	withOperator(t, func(o *app.Options) { o.MetricsAddr, o.MetricsSecure = addr, true })
	o := newOrg(t)
	rc := newReceiver(t, nil)
	applyEndpoint(t, o.ns, rc.url(), nil)
	id := o.createCall(t, "+14155550180", nil)
	o.waitAnalyzed(t, id)
	g.Eventually(func() int { return len(rc.forCall(id)) }, 20*time.Second, 50*time.Millisecond).Should(Equal(3))

	grantMetricsAuth(t)
	reader := serviceAccountToken(t, o.ns, "prometheus")
	stranger := serviceAccountToken(t, o.ns, "stranger")
	bindMetricsReader(t, o.ns, "prometheus")

	// The manager's certificate is self-signed, as the ServiceMonitor of
	// config/prometheus expects.
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a self-signed test server
	scrape := func(token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+addr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	g.Eventually(func() int { code, _ := scrape(""); return code }, 20*time.Second, 100*time.Millisecond).
		Should(Equal(http.StatusUnauthorized), "no token")
	code, _ := scrape(stranger)
	g.Expect(code).To(Equal(http.StatusForbidden), "a token without the metrics-reader role")
	g.Eventually(func() string {
		code, body := scrape(reader)
		if code != http.StatusOK {
			return fmt.Sprint(code)
		}
		return body
	}, 20*time.Second, 200*time.Millisecond).Should(And(ContainSubstring(`switchboard_calls_created_total{source="api"}`),
		ContainSubstring(`switchboard_webhook_delivery_attempts_total{result="succeeded"}`),
		ContainSubstring("switchboard_webhook_delivery_lag_seconds_count"),
		ContainSubstring("switchboard_webhook_deliveries_pending "),
		ContainSubstring("switchboard_calls_live ")))
}

// serviceAccountToken creates a ServiceAccount and a short-lived token for
// it, as the kubelet mounts into a pod.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	NewWithT(t).Expect(k8s.Create(ctx, sa)).To(Succeed())
	tr, err := kubernetes.NewForConfigOrDie(restConfig).CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(600))}},
		metav1.CreateOptions{})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// grantMetricsAuth installs config/rbac's metrics-auth ClusterRole and its
// binding to the manager, as config/default does: the manager asks the
// apiserver about each scrape's token.
func grantMetricsAuth(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var role rbacv1.ClusterRole
	var binding rbacv1.ClusterRoleBinding
	for _, doc := range metricsAuthDocs(t) {
		var meta metav1.TypeMeta
		_ = yaml.Unmarshal([]byte(doc), &meta)
		switch {
		case meta.Kind == "ClusterRole" && strings.Contains(doc, "name: metrics-auth-role"):
			NewWithT(t).Expect(yaml.Unmarshal([]byte(doc), &role)).To(Succeed())
		case meta.Kind == "ClusterRoleBinding":
			NewWithT(t).Expect(yaml.Unmarshal([]byte(doc), &binding)).To(Succeed())
		}
	}
	// The names and namespace config/default's kustomization gives them.
	role.Name, binding.Name, binding.RoleRef.Name = "switchboard-"+role.Name, "switchboard-"+binding.Name, "switchboard-"+binding.RoleRef.Name
	binding.Subjects[0].Namespace, binding.Subjects[0].Name = "switchboard-system", "switchboard-"+binding.Subjects[0].Name
	for _, obj := range []client.Object{&role, &binding} {
		err := k8s.Create(ctx, obj)
		if !apierrors.IsAlreadyExists(err) {
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
		}
	}
}

func metricsAuthDocs(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "metrics_auth_role.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return strings.Split(string(raw), "\n---\n")
}

// bindMetricsReader binds config/rbac's metrics-reader ClusterRole to the
// ServiceAccount.
func bindMetricsReader(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	var role *rbacv1.ClusterRole
	for _, doc := range metricsAuthDocs(t) {
		var r rbacv1.ClusterRole
		if yaml.Unmarshal([]byte(doc), &r) == nil && r.Kind == "ClusterRole" && r.Name == "metrics-reader" {
			role = &r
		}
	}
	NewWithT(t).Expect(role).NotTo(BeNil(), "config/rbac/metrics_auth_role.yaml has no metrics-reader ClusterRole")
	role.Name = ns + "-metrics-reader"
	NewWithT(t).Expect(k8s.Create(ctx, role)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, role) })
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}}}
	NewWithT(t).Expect(k8s.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, binding) })
}

func ptrTo[T any](v T) *T { return &v }
