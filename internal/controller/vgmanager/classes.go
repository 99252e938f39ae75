package vgmanager

import (
	"context"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// Classes returns the device classes this node is to serve, sorted: the names of the namespace's
// LVMVolumeGroups that select the node and are not being deleted, read from the manager's cache,
// less those this node reports Failed (they will have no capacity until someone mends them). A
// volume group whose nodeSelector cannot be evaluated is left out (its reconcile reports it).
func (r *Reconciler) Classes(ctx context.Context) ([]string, error) {
	node, err := r.node(ctx)
	if err != nil {
		return nil, err
	}
	entries, err := r.ownEntries(ctx)
	if err != nil {
		return nil, err
	}
	var list lvmv1alpha1.LVMVolumeGroupList
	if err := r.client.List(ctx, &list, client.InNamespace(r.namespace)); err != nil {
		return nil, fmt.Errorf("list LVMVolumeGroups: %w", err)
	}
	var out []string
	for i := range list.Items {
		vg := &list.Items[i]
		if !vg.DeletionTimestamp.IsZero() || entries[vg.Name].Status == lvmv1alpha1.VGStatusFailed {
			continue
		}
		if ok, err := r.selects(vg, node); err == nil && ok {
			out = append(out, vg.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}
