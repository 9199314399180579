//go:build tools

// Package envtest pins the control plane that the tests and `make run` start:
// kube-apiserver and etcd (and kubectl where the machine has none), built from
// source by hack/setup-envtest.sh. Importing the main packages here keeps their
// modules required, so go.mod and go.sum name every version and checksum of the
// build and `go build -mod=readonly` never resolves anything on its own.
package envtest

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
