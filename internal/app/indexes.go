package app

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/apikeys"
	"github.com/switchboard-dev/switchboard/internal/numberlists"
	"github.com/switchboard-dev/switchboard/internal/organizations"
)

// Organizations are labelled namespaces (package organizations), and their
// limits are annotations on them (package quota).
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// feedIndexes keeps the number-list and API-key indexes in step with the
// informers, on every replica. Deleting a key's Secret revokes it at once,
// and so does a namespace ceasing to be an organization.
// It returns functions that report when each index holds the initial list.
func feedIndexes(ctx context.Context, c cache.Cache, secrets *organizations.Secrets, numbers *numberlists.Index,
	keys *apikeys.Index) ([]func() bool, error) {
	lists, err := c.GetInformer(ctx, &switchboardv1.NumberList{})
	if err != nil {
		return nil, fmt.Errorf("number list informer: %w", err)
	}
	listsReg, err := lists.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { setNumberList(numbers, o) },
		UpdateFunc: func(_, o any) { setNumberList(numbers, o) },
		DeleteFunc: func(o any) {
			if l, ok := unwrap(o).(*switchboardv1.NumberList); ok {
				numbers.Delete(l.Namespace, l.Name)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	secrets.Subscribe(organizations.Handler{
		Upsert: keys.Upsert,
		Delete: func(s *corev1.Secret) { keys.Delete(s.Namespace, s.Name) },
		Forget: keys.DeleteNamespace,
	})
	return []func() bool{listsReg.HasSynced, secrets.HasSynced}, nil
}

func setNumberList(ix *numberlists.Index, o any) {
	if l, ok := o.(*switchboardv1.NumberList); ok {
		ix.Set(l.Namespace, l.Name, l.Spec.Type, l.Spec.Numbers, l.Spec.Prefixes)
	}
}

// unwrap returns the last known object of a delete whose watch was missed.
func unwrap(o any) any {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return o
}
