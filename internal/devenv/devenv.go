// Package devenv is the embedded control plane of `make run`: a real
// kube-apiserver and etcd (the binaries the tests use), the CRDs,
// Switchboard's RBAC, a demo organization with the samples and an API key,
// and the files a second terminal needs (.dev/kubeconfig, .dev/api-key).
package devenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Options say where things are.
type Options struct {
	// AssetsDir holds kube-apiserver, etcd and kubectl (hack/setup-envtest.sh).
	AssetsDir string
	// StateDir receives kubeconfig and api-key (.dev).
	StateDir string
	// CRDDir holds the generated CRDs (config/crd/bases).
	CRDDir string
	// SamplesDir holds the demo resources (config/samples).
	SamplesDir string
	// RBACDir holds Switchboard's roles and the organization RoleBinding
	// template (config/rbac).
	RBACDir string
	// PolicyDir holds the admission policies a deployment installs
	// (config/policy).
	PolicyDir string
	// Namespace is the demo organization.
	Namespace string
	// URL is where this instance serves, for a second instance to tell.
	URL string
	// SampleAddrs are where the samples' local peers listen; the samples
	// are pointed there (SampleAddrsFromEnv). Empty: the files' own.
	SampleAddrs SampleAddrs
}

// Env is a running control plane.
type Env struct {
	// Config is the manager's: its service account's rights, no more.
	Config *rest.Config
	APIKey string
	// Fresh: the state folder held no cluster data; the samples were
	// applied. A restart keeps what the last run left instead.
	Fresh bool
	// Ended lists the control-plane processes that an earlier instance
	// left running (it died without stopping them) and Start ended.
	Ended []Leftover
	env   *envtest.Environment
	lock  *instanceLock
}

// Start starts the control plane and seeds the demo organization. It
// refuses at once, with a *RunningError, when another instance runs from
// the same state folder, and ends the control plane of an earlier instance
// that died without stopping it. Interrupted (ctx done) while starting,
// it stops what it started and returns ctx's error.
func Start(ctx context.Context, opts Options) (*Env, error) {
	opts.SampleAddrs = SampleAddrs{StreamBot: orDefault(opts.SampleAddrs.StreamBot, DefaultStreamBotAddr),
		SIPTrunk:     orDefault(opts.SampleAddrs.SIPTrunk, DefaultSampleTrunkAddr),
		StandInModel: orDefault(opts.SampleAddrs.StandInModel, DefaultStandInModelAddr)}
	// etcd keeps its data under the state folder, so that calls, agents
	// and endpoints survive a restart of `make run`. The path is absolute
	// so that a leftover etcd can be recognized by it.
	etcdDir, err := filepath.Abs(filepath.Join(opts.StateDir, "etcd"))
	if err != nil {
		return nil, err
	}
	lock, err := lockState(opts.StateDir, opts.URL)
	if err != nil {
		return nil, err
	}
	e := &Env{lock: lock}
	if e.Ended, err = endLeftovers(etcdDir); err != nil {
		return nil, errors.Join(fmt.Errorf("ending the control plane an earlier instance left running: %w", err), lock.release())
	}
	if e.Fresh, err = freshState(opts.StateDir, etcdDir); err != nil {
		return nil, errors.Join(err, lock.release())
	}
	e.env = &envtest.Environment{
		BinaryAssetsDirectory: opts.AssetsDir,
		CRDDirectoryPaths:     []string{opts.CRDDir},
		ErrorIfCRDPathMissing: true,
	}
	e.env.ControlPlane.Etcd = &envtest.Etcd{DataDir: etcdDir}
	cfg, err := e.env.Start()
	if err != nil {
		// envtest may have started etcd before the apiserver failed.
		return nil, errors.Join(fmt.Errorf("starting control plane (assets in %q): %w", opts.AssetsDir, err), e.Stop())
	}
	if ctx.Err() != nil { // interrupted while the binaries started
		return nil, errors.Join(ctx.Err(), e.Stop())
	}
	if err := e.seed(ctx, cfg, opts); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	return e, nil
}

// Stop stops kube-apiserver and etcd, and lets another instance start.
func (e *Env) Stop() error { return errors.Join(e.env.Stop(), e.lock.release()) }

// seedingFile marks a state folder whose demo samples are not applied yet:
// an instance killed between creating the cluster data and applying them
// applies them at the next start.
const seedingFile = "seeding"

// freshState tells whether the demo samples are still to be applied, and
// creates the cluster data folder.
func freshState(stateDir, etcdDir string) (bool, error) {
	_, err := os.Stat(etcdDir)
	fresh := errors.Is(err, os.ErrNotExist)
	if _, err := os.Stat(filepath.Join(stateDir, seedingFile)); err == nil {
		fresh = true
	}
	if fresh {
		if err := os.WriteFile(filepath.Join(stateDir, seedingFile), nil, 0o600); err != nil {
			return false, err
		}
	}
	return fresh, os.MkdirAll(etcdDir, 0o700)
}

// seed installs Switchboard's RBAC and the demo organization as admin.
func (e *Env) seed(ctx context.Context, admin *rest.Config, opts Options) error {
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return err
	}
	if err := e.writeKubeconfig(filepath.Join(opts.StateDir, "kubeconfig")); err != nil {
		return err
	}
	c, err := client.New(admin, client.Options{})
	if err != nil {
		return err
	}
	if err := InstallRBAC(ctx, c, opts.RBACDir); err != nil {
		return err
	}
	manager, err := e.env.AddUser(ManagerUser, admin)
	if err != nil {
		return fmt.Errorf("creating the manager's user: %w", err)
	}
	e.Config = manager.Config()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opts.Namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", opts.Namespace, err)
	}
	if err := AddOrganization(ctx, c, opts.RBACDir, opts.Namespace); err != nil {
		return err
	}
	if err := InstallPolicies(ctx, c, opts.PolicyDir); err != nil {
		return err
	}
	// Applied once: a restart must not place the sample call again, nor
	// undo what the user changed.
	if e.Fresh {
		if err := applySamples(ctx, c, opts); err != nil {
			return err
		}
		if err := os.Remove(filepath.Join(opts.StateDir, seedingFile)); err != nil {
			return err
		}
	}
	if err := followAddrs(ctx, c, opts, e.Fresh); err != nil {
		return err
	}
	return e.createAPIKey(ctx, c, filepath.Join(opts.StateDir, "api-key"), opts.Namespace)
}

func (e *Env) writeKubeconfig(path string) error {
	user, err := e.env.AddUser(envtest.User{Name: "switchboard-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("creating admin user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, kubeconfig, 0o600)
}

// createAPIKey reuses the key of a previous run, so that a shell holding it
// keeps working across restarts of `make run`.
func (e *Env) createAPIKey(ctx context.Context, c client.Client, path, namespace string) error {
	key := readKey(path)
	if key == "" {
		key = "sk_demo_" + randomHex(24)
		if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
			return err
		}
	}
	e.APIKey = key
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "demo-api-key"},
		Type:       switchboardv1.APIKeySecretType,
		Data:       map[string][]byte{switchboardv1.APIKeySecretKey: []byte(key)},
	}
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating API key: %w", err)
	}
	return nil
}

func readKey(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// kindOrder creates what calls depend on before the calls.
var kindOrder = []string{"NumberList", "Agent", "Call"}

// applySamples creates every resource of the samples folder in the demo
// namespace, pointed at the local peers' addresses.
func applySamples(ctx context.Context, c client.Client, opts Options) error {
	objs, err := readSamples(opts.SamplesDir)
	if err != nil {
		return err
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return slices.Index(kindOrder, a.GetKind()) - slices.Index(kindOrder, b.GetKind())
	})
	for _, o := range objs {
		o.SetNamespace(opts.Namespace)
		pointAt(o, opts.SampleAddrs)
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating sample %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

func readSamples(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		docs, err := decodeAll(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		objs = append(objs, docs...)
	}
	return objs, nil
}

func decodeAll(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var o unstructured.Unstructured
		if err := dec.Decode(&o.Object); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(o.Object) > 0 {
			out = append(out, &o)
		}
	}
}
