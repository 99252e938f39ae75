package logicalvolume

import (
	"slices"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

// +kubebuilder:rbac:groups=topolvm.io,resources=logicalvolumes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=topolvm.io,resources=logicalvolumes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch

// SetupWithManager registers the controller with a watch on this node's LogicalVolumes. Updates of
// the status alone (this agent's own writes) do not trigger a reconcile; spec changes (a larger
// size), deletion and finalizer changes do.
//
// The agent needs RBAC get, list, watch, patch on topolvm.io logicalvolumes and patch on
// logicalvolumes/status.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("logicalvolume").
		For(&topolvmv1.LogicalVolume{}, builder.WithPredicates(r.onThisNode(), specOrLifecycleChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers})
	if r.copies != nil {
		b = b.WatchesRawSource(crsource.Channel(r.copies.wake, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

func (r *Reconciler) onThisNode() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		lv, ok := o.(*topolvmv1.LogicalVolume)
		return ok && lv.Spec.NodeName == r.nodeName
	})
}

// specOrLifecycleChanged passes updates that change the generation, the deletion timestamp, the
// finalizers, or the operator's token of a copy from another node.
func specOrLifecycleChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetGeneration() != n.GetGeneration() ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
			!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) ||
			tokenAttempt(o) != tokenAttempt(n)
	}}
}

// tokenAttempt is the attempt the object's transfer token is for (0: none).
func tokenAttempt(o client.Object) int32 {
	lv, ok := o.(*topolvmv1.LogicalVolume)
	if !ok || lv.Status.Transfer == nil {
		return 0
	}
	return lv.Status.Transfer.TokenAttempt
}
