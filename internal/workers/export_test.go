package workers

import "sigs.k8s.io/controller-runtime/pkg/predicate"

// Sighted exposes the assigner's event filter to the tests: it notes when
// each unassigned Call was first seen.
func (a *Assigner) Sighted() predicate.Predicate { return a.sighted() }
