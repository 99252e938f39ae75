package vgmanager

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// What the node agent needs:
// +kubebuilder:rbac:groups=lvm.topolvm.io,namespace=lvms-system,resources=lvmvolumegroups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=lvm.topolvm.io,namespace=lvms-system,resources=lvmvolumegroups/finalizers,verbs=update
// +kubebuilder:rbac:groups=lvm.topolvm.io,namespace=lvms-system,resources=lvmvolumegroupnodestatuses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=lvm.topolvm.io,namespace=lvms-system,resources=lvmclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller. Watches: LVMVolumeGroups of the operator namespace,
// the owning LVMCluster's annotations (dry-run), and this node's labels (nodeSelector). One
// reconcile at a time: volume groups of one node share its disks. It also adds FeedLVMDAtStart.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(manager.RunnableFunc(r.FeedLVMDAtStart)); err != nil {
		return fmt.Errorf("add the first lvmd feed: %w", err)
	}
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.namespace })
	return ctrl.NewControllerManagedBy(mgr).
		Named("vgmanager").
		For(&lvmv1alpha1.LVMVolumeGroup{}, builder.WithPredicates(inNamespace, r.updatesThatMatter())).
		Watches(&lvmv1alpha1.LVMCluster{}, handler.EnqueueRequestsFromMapFunc(r.ownedVolumeGroups),
			builder.WithPredicates(inNamespace, predicate.AnnotationChangedPredicate{})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.allVolumeGroups),
			builder.WithPredicates(r.thisNodeLabelsChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(r)
}

// updatesThatMatter passes creations, deletions and the updates of an LVMVolumeGroup that
// VolumeGroupUpdateMatters to this node.
func (r *Reconciler) updatesThatMatter() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, okOld := e.ObjectOld.(*lvmv1alpha1.LVMVolumeGroup)
		n, okNew := e.ObjectNew.(*lvmv1alpha1.LVMVolumeGroup)
		return !okOld || !okNew || VolumeGroupUpdateMatters(r.nodeName, o, n)
	}}
}

// VolumeGroupUpdateMatters reports whether an update of an LVMVolumeGroup can change what node's
// reconcile does: its spec (generation), its deletion, node's own finalizer or wiped annotation, or
// the dry-run annotation. Other nodes' finalizers and annotations and the status the operator
// writes cannot. Without this filter every node reconciled, and applied its status again, each time
// any other node added its finalizer: N² requests for N nodes joining (docs/performance.md).
func VolumeGroupUpdateMatters(node string, old, updated *lvmv1alpha1.LVMVolumeGroup) bool {
	fin, wiped := Finalizer(node), WipedAnnotation(node)
	return old.Generation != updated.Generation ||
		old.DeletionTimestamp.IsZero() != updated.DeletionTimestamp.IsZero() ||
		controllerutil.ContainsFinalizer(old, fin) != controllerutil.ContainsFinalizer(updated, fin) ||
		old.Annotations[wiped] != updated.Annotations[wiped] ||
		old.Annotations[DryRunAnnotation] != updated.Annotations[DryRunAnnotation]
}

// ownedVolumeGroups maps an LVMCluster to the LVMVolumeGroups it owns.
func (r *Reconciler) ownedVolumeGroups(ctx context.Context, o client.Object) []reconcile.Request {
	return r.volumeGroups(ctx, func(vg *lvmv1alpha1.LVMVolumeGroup) bool {
		for _, ref := range vg.OwnerReferences {
			if ref.UID == o.GetUID() {
				return true
			}
		}
		return false
	})
}

func (r *Reconciler) allVolumeGroups(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.volumeGroups(ctx, func(*lvmv1alpha1.LVMVolumeGroup) bool { return true })
}

func (r *Reconciler) volumeGroups(
	ctx context.Context,
	match func(*lvmv1alpha1.LVMVolumeGroup) bool,
) []reconcile.Request {
	var list lvmv1alpha1.LVMVolumeGroupList
	if err := r.client.List(ctx, &list, client.InNamespace(r.namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List LVMVolumeGroups for a watch event")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if match(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// thisNodeLabelsChanged passes events of this node that can change which volume groups select it,
// not its status heartbeats.
func (r *Reconciler) thisNodeLabelsChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return e.Object.GetName() == r.nodeName },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectNew.GetName() == r.nodeName &&
				!equality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
		},
	}
}
