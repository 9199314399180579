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
)

// API keys are Secrets; only those of type switchboard.dev/api-key are cached.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// An organization's limits are annotations on its namespace (package quota).
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// feedIndexes keeps the number-list and API-key indexes in step with the
// informers, on every replica. Deleting a key's Secret revokes it at once.
// It returns functions that report when each index holds the initial list.
func feedIndexes(ctx context.Context, c cache.Cache, numbers *numberlists.Index, keys *apikeys.Index) ([]func() bool, error) {
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
	secrets, err := c.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return nil, fmt.Errorf("secret informer: %w", err)
	}
	secretsReg, err := secrets.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { upsertKey(keys, o) },
		UpdateFunc: func(_, o any) { upsertKey(keys, o) },
		DeleteFunc: func(o any) {
			if s, ok := unwrap(o).(*corev1.Secret); ok {
				keys.Delete(s.Namespace, s.Name)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	return []func() bool{listsReg.HasSynced, secretsReg.HasSynced}, nil
}

func setNumberList(ix *numberlists.Index, o any) {
	if l, ok := o.(*switchboardv1.NumberList); ok {
		ix.Set(l.Namespace, l.Name, l.Spec.Type, l.Spec.Numbers, l.Spec.Prefixes)
	}
}

func upsertKey(ix *apikeys.Index, o any) {
	if s, ok := o.(*corev1.Secret); ok {
		ix.Upsert(s)
	}
}

// unwrap returns the last known object of a delete whose watch was missed.
func unwrap(o any) any {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return o
}
