package lvmcluster

import (
	"context"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// SetupWithManager registers the controller and its watches: the LVMCluster, its owned operands
// (drift repair), cluster-scoped operands by name (a StorageClass replaced by someone else carries
// none of our labels; the node agent policy, policywatch.go), node reports, node changes that
// alter which nodes are selected, and PVCs on our classes (which unblock deletion).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	toAll := handler.EnqueueRequestsFromMapFunc(r.allClusters)
	b := ctrl.NewControllerManagedBy(mgr)
	if r.opts.NodeAgentPolicy {
		b = watchNodeAgentPolicy(b, toAll)
	}
	return b.
		Named("lvmcluster").
		For(&lvmv1alpha1.LVMCluster{}).
		Owns(&appsv1.DaemonSet{}).
		Owns(&appsv1.Deployment{}).
		Owns(&lvmv1alpha1.LVMVolumeGroup{}).
		Watches(&storagev1.StorageClass{}, toAll, builder.WithPredicates(named(func(n string) bool {
			return strings.HasPrefix(n, StorageClassPrefix)
		}))).
		Watches(
			&storagev1.CSIDriver{},
			toAll,
			builder.WithPredicates(named(func(n string) bool { return n == driver.Name })),
		).
		Watches(&lvmv1alpha1.LVMVolumeGroupNodeStatus{}, toAll).
		Watches(&corev1.Node{}, toAll, builder.WithPredicates(nodeSchedulingChanged())).
		Watches(&corev1.PersistentVolumeClaim{}, toAll, builder.WithPredicates(onOurClaims())).
		Complete(r)
}

func (r *Reconciler) allClusters(ctx context.Context, _ client.Object) []reconcile.Request {
	var list lvmv1alpha1.LVMClusterList
	if err := r.client.List(ctx, &list, client.InNamespace(r.opts.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List LVMClusters for a watch event")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// nodeSchedulingChanged passes node events that can change which nodes a device class selects,
// not the frequent status heartbeats.
func nodeSchedulingChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.Node)
			n, ok2 := e.ObjectNew.(*corev1.Node)
			if !ok1 || !ok2 {
				return true
			}
			return !equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
				!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
				o.Spec.Unschedulable != n.Spec.Unschedulable ||
				o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
		},
	}
}

// onOurClaims passes events of PVCs on lvms StorageClasses, and the deletion of any PVC: a claim
// on a user's copy of our class, under any name, also holds the LVMCluster's deletion up.
func onOurClaims() predicate.Predicate {
	ours := func(o client.Object) bool {
		p, ok := o.(*corev1.PersistentVolumeClaim)
		return ok && p.Spec.StorageClassName != nil && strings.HasPrefix(*p.Spec.StorageClassName, StorageClassPrefix)
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return ours(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return ours(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(e event.GenericEvent) bool { return ours(e.Object) },
	}
}

// named passes events of objects whose name satisfies match.
func named(match func(string) bool) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return match(o.GetName()) })
}
