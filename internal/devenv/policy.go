package devenv

import (
	"context"
	"fmt"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InstallPolicies creates or updates the admission policies of policyDir
// (config/policy) under the names config/default gives them, so that the
// local instance refuses what a deployment refuses (a Call applied with
// spec.source "api", say). The apiserver enforces them itself.
func InstallPolicies(ctx context.Context, c client.Client, policyDir string) error {
	files, err := filepath.Glob(filepath.Join(policyDir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		objs, err := readYAML(f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			// A binding's policyName is written with the prefix already:
			// kustomize's namePrefix renames the policy, not the reference.
			o.SetName(namePrefix + o.GetName())
			if err := createOrUpdate(ctx, c, o); err != nil {
				return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
	}
	return nil
}
