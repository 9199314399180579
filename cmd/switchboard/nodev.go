//go:build !dev

package main

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// devLeaderElectionNamespace is unused without the dev tag: --dev stops
// at localControlPlane first.
const devLeaderElectionNamespace = ""

// localControlPlane: this build carries no embedded control plane.
func localControlPlane(context.Context, settings, logr.Logger) (*rest.Config, func(), error) {
	return nil, nil, errors.New("--dev needs the development binary, which embeds a control plane: use `make run` " +
		"(or go build -tags dev ./cmd/switchboard)")
}
