// Command switchboard runs the Switchboard operator: the reconcilers and the
// REST API. With --dev it first starts an embedded control plane with demo
// data (`make run`).
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/history"
)

func main() {
	o, given := parseFlags()
	set, err := resolve(*o, os.Getenv, given)
	if err != nil {
		// One line a user can act on; a stack trace would only bury it.
		fmt.Fprintln(os.Stderr, "switchboard:", err)
		os.Exit(1)
	}
	log := zap.New(zap.UseFlagOptions(&set.log))
	ctrl.SetLogger(log)
	for _, note := range set.notes {
		log.Info(note)
	}
	ctx := ctrl.SetupSignalHandler()
	err = run(ctx, set, log)
	switch {
	case err == nil:
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		// Ctrl-C before the instance was up: what had started stopped.
		log.Info("interrupted while starting; stopped")
	default:
		fmt.Fprintln(os.Stderr, "switchboard:", err)
		os.Exit(1)
	}
}

// run starts the operator with the resolved settings.
func run(ctx context.Context, set settings, log logr.Logger) error {
	cfg, stop, err := controlPlane(ctx, set, log)
	if err != nil {
		return err
	}
	defer stop()
	set.client.Apply(cfg)
	opts := set.app
	if opts.RecordingS3 == nil { // S3 links are signed with the S3 credentials
		if opts.RecordingSigningKey, err = signingKey(set); err != nil {
			return err
		}
	}
	if opts.APIListener, err = (&net.ListenConfig{}).Listen(ctx, "tcp", set.apiAddr); err != nil {
		return fmt.Errorf("REST API address: %w", err)
	}
	if opts.History, err = history.Open(ctx, set.historyDSN); err != nil {
		return fmt.Errorf("history store: %w", err)
	}
	defer func() { _ = opts.History.Close() }()
	log.Info("history store open", "store", history.Describe(set.historyDSN))
	opts.Log, opts.OnServing = log, set.banner
	mgr, err := app.New(ctx, cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// banner tells a `make run` user what to type next, once it works.
func (set settings) banner() {
	if !set.dev.enabled {
		return
	}
	fmt.Fprintf(os.Stderr, "\nSwitchboard is running. In another terminal:\n"+
		"  export KUBECONFIG=%[1]s/kubeconfig\n"+
		"  curl -s http://%[2]s/v1/calls -H \"Authorization: Bearer $(cat %[1]s/api-key)\" \\\n"+
		"    -d '{\"agent_id\":\"7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f\",\"to_number\":\"+14155551234\",\"variables\":{\"customer_name\":\"Ada\"}}'\n"+
		"  kubectl get calls -n demo\n"+
		"Dashboard: http://%[2]s/dashboard/ (sign in with the key in %[1]s/api-key)\n", set.dev.dir, set.apiAddr)
	if set.app.MetricsAddr != "0" {
		fmt.Fprintf(os.Stderr, "  curl -s http://%s/metrics | grep ^switchboard_\n", set.app.MetricsAddr)
	}
	fmt.Fprint(os.Stderr, "Ctrl-C stops everything.\n\n")
}

// controlPlane returns the cluster to run against: the embedded one with
// --dev (in a binary built with the dev tag), else the usual kubeconfig /
// in-cluster lookup.
func controlPlane(ctx context.Context, set settings, log logr.Logger) (*rest.Config, func(), error) {
	if set.dev.enabled {
		return localControlPlane(ctx, set, log)
	}
	cfg, err := ctrl.GetConfig()
	return cfg, func() {}, err
}

// signingKey reads the recording-link key. Without one, --dev keeps a key
// in its folder (links survive restarts); otherwise a random key is used
// and links stop working when the process restarts.
func signingKey(set settings) ([]byte, error) {
	if set.signingKey != nil { // env SWITCHBOARD_RECORDING_SIGNING_KEY
		return set.signingKey, nil
	}
	if set.recordingKeyFile != "" {
		return os.ReadFile(set.recordingKeyFile)
	}
	path := filepath.Join(set.dev.dir, "recording-signing-key")
	if set.dev.enabled {
		if k, err := os.ReadFile(path); err == nil && len(k) >= 32 {
			return k, nil
		}
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	if set.dev.enabled {
		return k, os.WriteFile(path, k, 0o600)
	}
	ctrl.Log.Info("no recording signing key configured: using a random one; recording links break on restart")
	return k, nil
}
