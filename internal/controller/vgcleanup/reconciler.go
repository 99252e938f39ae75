// Package vgcleanup is the operator's release of deleted LVMVolumeGroups: the operator holds each
// LVMVolumeGroup it makes with one finalizer (lvmv1alpha1.VolumeGroupCleanupFinalizer) and lets it
// go once no node's LVMVolumeGroupNodeStatus has an entry for it, that is once every node that
// claimed the volume group has torn it down (the node agents write their entry before they build a
// volume group and drop it after the teardown; internal/controller/vgmanager). A removed Node's
// status is deleted by the node-removal controller, which releases its claims.
package vgcleanup

import (
	"context"
	"fmt"
	"slices"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// Reconciler releases the deleted LVMVolumeGroups of the operator's namespace.
type Reconciler struct {
	client    client.Client
	reader    client.Reader
	namespace string
}

// New returns the controller of namespace; reader reads the node statuses past the cache (the
// manager's API reader) before the finalizer goes: a node's claim written just before the deletion
// began must be seen, and the cache may not have it yet.
func New(cl client.Client, reader client.Reader, namespace string) *Reconciler {
	return &Reconciler{client: cl, reader: reader, namespace: namespace}
}

// +kubebuilder:rbac:groups=lvm.topolvm.io,resources=lvmvolumegroups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=lvm.topolvm.io,resources=lvmvolumegroupnodestatuses,verbs=get;list;watch

// SetupWithManager reconciles the namespace's LVMVolumeGroups being deleted, again on every change
// of a node status (an entry dropped).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.namespace })
	return ctrl.NewControllerManagedBy(mgr).
		Named("vgcleanup").
		For(&lvmv1alpha1.LVMVolumeGroup{}, builder.WithPredicates(inNamespace, predicate.NewPredicateFuncs(
			func(o client.Object) bool { return !o.GetDeletionTimestamp().IsZero() }))).
		Watches(&lvmv1alpha1.LVMVolumeGroupNodeStatus{}, handler.EnqueueRequestsFromMapFunc(r.deleting),
			builder.WithPredicates(inNamespace)).
		Complete(r)
}

// deleting maps a node status change to the LVMVolumeGroups being deleted (few, and only then).
func (r *Reconciler) deleting(ctx context.Context, _ client.Object) []reconcile.Request {
	var list lvmv1alpha1.LVMVolumeGroupList
	if err := r.client.List(ctx, &list, client.InNamespace(r.namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing LVMVolumeGroups for a node status change")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if vg := &list.Items[i]; !vg.DeletionTimestamp.IsZero() &&
			controllerutil.ContainsFinalizer(vg, lvmv1alpha1.VolumeGroupCleanupFinalizer) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(vg)})
		}
	}
	return out
}

// Reconcile removes the finalizer of a deleted LVMVolumeGroup once no node claims it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vg := &lvmv1alpha1.LVMVolumeGroup{}
	if err := r.client.Get(ctx, req.NamespacedName, vg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if vg.DeletionTimestamp.IsZero() ||
		!controllerutil.ContainsFinalizer(vg, lvmv1alpha1.VolumeGroupCleanupFinalizer) {
		return ctrl.Result{}, nil
	}
	// The cache first (every node status change of a deletion comes here), then, once it shows no
	// claim, the API server.
	holders, err := r.claimants(ctx, r.client, vg.Name)
	if err == nil && len(holders) == 0 {
		holders, err = r.claimants(ctx, r.reader, vg.Name)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	log := ctrl.LoggerFrom(ctx).WithValues("LVMVolumeGroup", vg.Name)
	if len(holders) > 0 {
		log.V(1).Info("Deletion waits for nodes to tear the volume group down", "nodes", holders)
		return ctrl.Result{}, nil // a node status change brings it back
	}
	orig := vg.DeepCopy()
	controllerutil.RemoveFinalizer(vg, lvmv1alpha1.VolumeGroupCleanupFinalizer)
	if err := r.client.Patch(
		ctx,
		vg,
		client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}),
	); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("release LVMVolumeGroup %s: %w", vg.Name, err))
	}
	log.Info("Released the LVMVolumeGroup: no node has its volume group")
	return ctrl.Result{}, nil
}

// claimants lists the nodes whose LVMVolumeGroupNodeStatus, as rd reads it, has an entry for volume
// group vg.
func (r *Reconciler) claimants(ctx context.Context, rd client.Reader, vg string) ([]string, error) {
	var list lvmv1alpha1.LVMVolumeGroupNodeStatusList
	if err := rd.List(ctx, &list, client.InNamespace(r.namespace)); err != nil {
		return nil, fmt.Errorf("list LVMVolumeGroupNodeStatuses: %w", err)
	}
	var out []string
	for _, st := range list.Items {
		if slices.ContainsFunc(st.Spec.LiveNodeStatus, func(e lvmv1alpha1.VGStatus) bool { return e.Name == vg }) {
			out = append(out, st.Name)
		}
	}
	return out, nil
}
