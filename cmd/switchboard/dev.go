//go:build dev

package main

// The embedded control plane of `make run` (envtest's kube-apiserver and
// etcd, the demo organization) is linked only into the development binary
// (go build -tags dev): the shipped image carries none of it.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/switchboard-dev/switchboard/hack/standinllm"
	"github.com/switchboard-dev/switchboard/hack/streambot"
	"github.com/switchboard-dev/switchboard/internal/devenv"
)

const devLeaderElectionNamespace = devenv.LeaderElectionNamespace

// localControlPlane starts the embedded control plane of `make run`.
func localControlPlane(ctx context.Context, set settings, log logr.Logger) (*rest.Config, func(), error) {
	assets := set.assets
	if assets == "" {
		return nil, nil, errors.New("--dev needs SWITCHBOARD_ASSETS (the folder hack/setup-envtest.sh prints); use `make run`")
	}
	log.Info("starting embedded control plane")
	addrs := devenv.SampleAddrsFromEnv(set.getenv)
	env, err := devenv.Start(ctx, devenv.Options{AssetsDir: assets, StateDir: set.dev.dir,
		CRDDir: "config/crd/bases", SamplesDir: "config/samples", RBACDir: "config/rbac", PolicyDir: "config/policy",
		Namespace: "demo", URL: "http://" + set.apiAddr, SampleAddrs: addrs})
	if err != nil {
		return nil, nil, err
	}
	if len(env.Ended) > 0 {
		log.Info("ended the control plane left running by an earlier instance that was killed before it could stop it",
			"processes", fmt.Sprint(env.Ended))
	}
	log.Info("control plane ready", "kubeconfig", filepath.Join(set.dev.dir, "kubeconfig"),
		"apiKeyFile", filepath.Join(set.dev.dir, "api-key"), "namespace", "demo", "runningAs", devenv.ManagerUser.Name)
	if env.Fresh {
		log.Info("new local state (cluster data, history store, recordings) in " + set.dev.dir + "; demo samples applied")
	} else {
		log.Info("resuming the local state kept in " + set.dev.dir + " (cluster data, history store, recordings); to start from scratch, stop and remove " + set.dev.dir)
	}
	log.Info("sample SIP trunk (SIPTrunk local-pbx): start a callee there to try it", "address", "sip:"+addrs.SIPTrunk,
		"moveWith", devenv.SampleTrunkAddrEnv)
	stopBot := startStreamBot(ctx, addrs.StreamBot, log)
	stopModel := startStandInModel(ctx, addrs.StandInModel, log)
	return env.Config, func() {
		stopModel()
		stopBot()
		if err := env.Stop(); err != nil {
			log.Error(err, "stopping control plane")
		}
	}, nil
}

// startStreamBot serves the example bot (hack/streambot) on loopback for
// the sample Agent stream-echo, at SWITCHBOARD_STREAMBOT_ADDR
// (127.0.0.1:8090 by default), where the Agent points. A busy port only
// loses the example.
func startStreamBot(ctx context.Context, addr string, log logr.Logger) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		botLog := slog.New(logr.ToSlogHandler(log.WithName("streambot")))
		if err := streambot.Serve(ctx, addr, streambot.Handler{Log: botLog}); err != nil {
			log.Error(err, "the example stream bot is not served", "addr", addr)
		}
	}()
	log.Info("example stream bot (Agent stream-echo)", "url", "ws://"+addr+"/stream")
	return func() {
		cancel()
		<-done
	}
}

// startStandInModel serves the stand-in model (hack/standinllm: a fixed
// dialogue, no model) on loopback for the sample Agent reservations-llm,
// at SWITCHBOARD_STANDIN_MODEL_ADDR (127.0.0.1:8091 by default). A busy
// port only loses the example.
func startStandInModel(ctx context.Context, addr string, log logr.Logger) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := standinllm.Serve(ctx, addr); err != nil {
			log.Error(err, "the stand-in model is not served", "addr", addr)
		}
	}()
	log.Info("stand-in model, a fixed dialogue and no model (Agent reservations-llm)", "url", "http://"+addr+"/v1")
	return func() {
		cancel()
		<-done
	}
}
