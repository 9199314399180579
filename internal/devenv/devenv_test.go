package devenv_test

// The behaviour of `make run`'s control plane, started from this
// repository's config folders as the development binary starts it.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/devenv"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

func options(t *testing.T, stateDir string) devenv.Options {
	t.Helper()
	testsupport.Needs(t, "a control plane (kube-apiserver and etcd)")
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal(`KUBEBUILDER_ASSETS is not set: run KUBEBUILDER_ASSETS="$(hack/setup-envtest.sh)" go test ./internal/devenv/, or make test`)
	}
	config := filepath.Join("..", "..", "config")
	return devenv.Options{AssetsDir: assets, StateDir: stateDir, CRDDir: filepath.Join(config, "crd", "bases"),
		SamplesDir: filepath.Join(config, "samples"), RBACDir: filepath.Join(config, "rbac"), PolicyDir: filepath.Join(config, "policy"),
		Namespace: "demo", URL: "http://127.0.0.1:8080"}
}

// A first start leaves what the README's second terminal uses (an admin
// kubeconfig, the demo organization's API key), the demo organization
// made as a platform team makes one, and the samples; the manager runs
// with its service account's rights only. A second instance on the same
// folder is refused. A restart keeps the key and the user's changes: the
// samples are not applied again.
func TestStartSeedsOnceAndKeepsState(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	opts := options(t, state)
	env, stop := start(t, opts)
	if !env.Fresh || !strings.HasPrefix(env.APIKey, "sk_demo_") {
		t.Fatalf("first start: fresh %v, key %q", env.Fresh, env.APIKey)
	}
	admin := adminClient(t, filepath.Join(state, "kubeconfig"))
	if key, err := os.ReadFile(filepath.Join(state, "api-key")); err != nil || strings.TrimSpace(string(key)) != env.APIKey {
		t.Fatalf(".dev/api-key holds %q (%v), want the key", key, err)
	}
	expectOrganization(t, admin, "demo", env.APIKey)
	var agent switchboardv1.Agent
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "appointment-reminder"}, &agent); err != nil {
		t.Fatalf("the sample agent: %v", err)
	}
	expectManagerRightsOnly(t, env)

	var running *devenv.RunningError
	if second, err := devenv.Start(ctx, opts); !errors.As(err, &running) || running.URL != opts.URL {
		if second != nil {
			_ = second.Stop()
		}
		t.Fatalf("a second instance on the same folder: %v, want a *RunningError naming %s", err, opts.URL)
	}

	if err := admin.Delete(ctx, &agent); err != nil {
		t.Fatal(err)
	}
	stop()
	again, _ := start(t, opts)
	if again.Fresh || again.APIKey != env.APIKey {
		t.Errorf("restart: fresh %v, key changed %v", again.Fresh, again.APIKey != env.APIKey)
	}
	admin = adminClient(t, filepath.Join(state, "kubeconfig"))
	err := admin.Get(ctx, client.ObjectKeyFromObject(&agent), &switchboardv1.Agent{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the sample agent the user deleted came back on restart (%v)", err)
	}
}

// start starts the control plane until stop, or the test's end.
func start(t *testing.T, opts devenv.Options) (env *devenv.Env, stop func()) {
	t.Helper()
	env, err := devenv.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		if err := env.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(stop)
	return env, stop
}

func adminClient(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, switchboardv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// expectOrganization: namespace is labelled an organization, binds
// Switchboard's role, and holds the key as an API-key Secret.
func expectOrganization(t *testing.T, c client.Client, namespace, key string) {
	t.Helper()
	ctx := context.Background()
	var ns corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil || ns.Labels[switchboardv1.OrganizationLabel] != "true" {
		t.Fatalf("namespace %s: labels %v (%v), want %s=true", namespace, ns.Labels, err, switchboardv1.OrganizationLabel)
	}
	var bindings rbacv1.RoleBindingList
	if err := c.List(ctx, &bindings, client.InNamespace(namespace)); err != nil || len(bindings.Items) == 0 {
		t.Fatalf("namespace %s has no RoleBinding (%v)", namespace, err)
	}
	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "demo-api-key"}, &secret); err != nil ||
		secret.Type != switchboardv1.APIKeySecretType || string(secret.Data[switchboardv1.APIKeySecretKey]) != key {
		t.Fatalf("the API key Secret: type %q (%v), want %s holding the key", secret.Type, err, switchboardv1.APIKeySecretType)
	}
}

// expectManagerRightsOnly: what make run's operator runs as may read
// Agents but may not do what only a cluster admin may (create a
// namespace), as in a deployment.
func expectManagerRightsOnly(t *testing.T, env *devenv.Env) {
	t.Helper()
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = switchboardv1.AddToScheme(scheme)
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &switchboardv1.AgentList{}); err != nil {
		t.Errorf("the manager cannot list Agents: %v", err)
	}
	err = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "not-allowed"}})
	if !apierrors.IsForbidden(err) {
		t.Errorf("the manager created a namespace (%v): it runs with more than its service account's rights", err)
	}
}

// The samples point at their local peers where the environment says they
// listen (the stream bot's Agent at SWITCHBOARD_STREAMBOT_ADDR, the SIP
// trunk at SWITCHBOARD_SAMPLE_TRUNK_ADDR), and follow when a restart moves
// them; a sample the user pointed elsewhere stays where the user put it.
func TestSamplesFollowTheirPeers(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	opts := options(t, state)
	opts.SampleAddrs = devenv.SampleAddrsFromEnv(env{
		devenv.StreamBotAddrEnv: "127.0.0.1:18090", devenv.SampleTrunkAddrEnv: "127.0.0.1:15070",
		devenv.StandInModelAddrEnv: "127.0.0.1:18091"}.get)
	_, stop := start(t, opts)
	admin := adminClient(t, filepath.Join(state, "kubeconfig"))
	expectPeers(t, admin, "ws://127.0.0.1:18090/stream", "sip:127.0.0.1:15070")
	expectModel(t, admin, "http://127.0.0.1:18091/v1")

	var trunk switchboardv1.SIPTrunk
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "local-pbx"}, &trunk); err != nil {
		t.Fatal(err)
	}
	trunk.Spec.Address = "sip:127.0.0.1:5080" // the user's own callee
	if err := admin.Update(ctx, &trunk); err != nil {
		t.Fatal(err)
	}
	stop()
	opts.SampleAddrs = devenv.SampleAddrs{StreamBot: "127.0.0.1:28090", SIPTrunk: "127.0.0.1:25070", StandInModel: "127.0.0.1:28091"}
	start(t, opts)
	admin = adminClient(t, filepath.Join(state, "kubeconfig"))
	expectPeers(t, admin, "ws://127.0.0.1:28090/stream", "sip:127.0.0.1:5080")
	expectModel(t, admin, "http://127.0.0.1:28091/v1")
}

// Without the variables, the samples keep the files' addresses.
func TestSampleAddrsFromEnv(t *testing.T) {
	if got := devenv.SampleAddrsFromEnv(env{}.get); got != (devenv.SampleAddrs{
		StreamBot: devenv.DefaultStreamBotAddr, SIPTrunk: devenv.DefaultSampleTrunkAddr, StandInModel: devenv.DefaultStandInModelAddr}) {
		t.Errorf("without the variables: %+v", got)
	}
	got := devenv.SampleAddrsFromEnv(env{devenv.SampleTrunkAddrEnv: " 192.0.2.10:5060 "}.get)
	if got.SIPTrunk != "192.0.2.10:5060" || got.StreamBot != devenv.DefaultStreamBotAddr {
		t.Errorf("with the trunk's variable: %+v", got)
	}
}

type env map[string]string

func (e env) get(k string) string { return e[k] }

// expectPeers: the stream Agent and the SIP trunk of the samples point at
// stream and trunk.
func expectPeers(t *testing.T, c client.Client, stream, trunk string) {
	t.Helper()
	ctx := context.Background()
	var agent switchboardv1.Agent
	if err := c.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "stream-echo"}, &agent); err != nil || agent.Spec.Stream == nil {
		t.Fatalf("the sample stream Agent: %v", err)
	}
	if agent.Spec.Stream.URL != stream {
		t.Errorf("the sample Agent streams to %s, want %s", agent.Spec.Stream.URL, stream)
	}
	var tr switchboardv1.SIPTrunk
	if err := c.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "local-pbx"}, &tr); err != nil {
		t.Fatal(err)
	}
	if tr.Spec.Address != trunk {
		t.Errorf("the sample SIPTrunk is at %s, want %s", tr.Spec.Address, trunk)
	}
}

// expectModel checks where the sample conversation Agent's model is.
func expectModel(t *testing.T, c client.Client, url string) {
	t.Helper()
	var agent switchboardv1.Agent
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "reservations-llm"}, &agent); err != nil ||
		agent.Spec.Conversation == nil || agent.Spec.Conversation.LLM == nil {
		t.Fatalf("the sample conversation Agent: %v", err)
	}
	if got := agent.Spec.Conversation.LLM.URL; got != url {
		t.Errorf("the sample Agent's model is at %s, want %s", got, url)
	}
}
