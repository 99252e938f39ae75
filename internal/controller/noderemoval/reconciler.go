// Package noderemoval is the operator's Node-removal controller: when a Node leaves the cluster, its
// node agent can no longer tear anything down, so the controller releases what that agent held —
// the per-node finalizers on LVMVolumeGroups and the node's LVMVolumeGroupNodeStatus. Without it, an
// LVMCluster (or a removed device class) whose node was deleted could never finish deleting.
//
// LogicalVolumes of a removed node are released only behind an explicit flag
// (--release-volumes-of-removed-nodes): a Node object can be deleted while the machine and its disks
// come back under the same name, and releasing a LogicalVolume forgets its LV for good. Without the
// flag such a LogicalVolume stays being deleted, and the controller says why in its log.
//
// Like TopoLVM's topolvm-controller, it can also delete the PersistentVolumeClaims bound to
// topolvm.io PersistentVolumes whose node affinity pins them to the removed node, so that a StatefulSet
// gets a new claim (and volume) on a node that exists — only behind --delete-claims-of-removed-nodes,
// for the same reason: the machine may come back with the data. It checks that the claim is the one
// the volume's claimRef names (same UID, and deletes with a UID precondition) and skips claims being
// deleted. Unlike TopoLVM it deletes no Pods: Kubernetes' pod garbage collector deletes the Pods bound
// to a Node that no longer exists; once no Pod uses the claim, pvc-protection lets it go, and the
// StatefulSet controller creates the Pod and a new claim. Without the flag it logs which claims stay.
//
// It never acts on a Node that exists.
package noderemoval

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// The operator flags that set Options; the controller's log names them.
const (
	ReleaseVolumesFlag = "release-volumes-of-removed-nodes"
	DeleteClaimsFlag   = "delete-claims-of-removed-nodes"
)

// Options are what the controller may do beyond releasing finalizers and node statuses. Both are
// off by default: a Node object can be deleted while its machine comes back under the same name.
type Options struct {
	// ReleaseVolumes (--release-volumes-of-removed-nodes): LogicalVolumes of a removed node that are
	// being deleted lose the node agent's finalizer, so their deletion (and the CSI DeleteVolume
	// waiting on it) completes; their LVs, if the disks still exist, become orphans.
	ReleaseVolumes bool
	// DeleteClaims (--delete-claims-of-removed-nodes): the claims bound to topolvm.io volumes of a
	// removed node are deleted, so that StatefulSets recreate them on nodes that exist.
	DeleteClaims bool
	// APIReader reads from the API server, not the cache (the manager's GetAPIReader): a Node the
	// cache does not have yet, or lost for a moment, is looked up there before anything of it is
	// released. Nil: the client's reads (tests).
	APIReader client.Reader
}

// Reconciler releases the finalizers and node statuses of Nodes that no longer exist.
type Reconciler struct {
	client    client.Client
	namespace string
	opts      Options
}

// New returns the controller for the operator in namespace.
func New(cl client.Client, namespace string, opts Options) *Reconciler {
	return &Reconciler{client: cl, namespace: namespace, opts: opts}
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=lvm.topolvm.io,resources=lvmvolumegroups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=lvm.topolvm.io,resources=lvmvolumegroupnodestatuses,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=topolvm.io,resources=logicalvolumes,verbs=get;list;watch;patch

// SetupWithManager reconciles on Node deletion and on every LVMVolumeGroup, node status and
// topolvm.io PersistentVolume (a finalizer, status or volume naming a node that is already gone when
// the operator starts).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("noderemoval").
		For(&corev1.Node{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(event.UpdateEvent) bool { return false },
			DeleteFunc: func(event.DeleteEvent) bool { return true },
		})).
		Watches(&lvmv1alpha1.LVMVolumeGroup{}, handler.EnqueueRequestsFromMapFunc(nodesOfFinalizers)).
		Watches(&lvmv1alpha1.LVMVolumeGroupNodeStatus{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetName()}}}
			})).
		Watches(&topolvmv1.LogicalVolume{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				lv, ok := o.(*topolvmv1.LogicalVolume)
				if !ok || lv.DeletionTimestamp.IsZero() || lv.Spec.NodeName == "" {
					return nil
				}
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: lv.Spec.NodeName}}}
			})).
		Watches(&corev1.PersistentVolume{}, handler.EnqueueRequestsFromMapFunc(nodeOfVolume)).
		Complete(r)
}

// nodesOfFinalizers maps an LVMVolumeGroup to the nodes its per-node finalizers name.
func nodesOfFinalizers(_ context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, f := range o.GetFinalizers() {
		if node, ok := strings.CutPrefix(f, lvmv1alpha1.CleanupFinalizerPrefix); ok && node != "" {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: node}})
		}
	}
	return out
}

// Reconcile handles one node name: if the Node exists, nothing is done; otherwise its finalizers
// and node status are released, and its LogicalVolumes and claims handled as Options say.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gone, err := r.nodeGone(ctx, req.Name)
	if err != nil || !gone {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, errors.Join(
		r.releaseFinalizers(ctx, req.Name),
		r.deleteNodeStatus(ctx, req.Name),
		r.releaseVolumesOf(ctx, req.Name),
		r.deleteClaimsOf(ctx, req.Name),
	)
}

// nodeGone reports whether Node name does not exist: the cache says so, and then the API server does
// too (a cache can miss a Node created a moment ago, or be rebuilt after a relist).
func (r *Reconciler) nodeGone(ctx context.Context, name string) (bool, error) {
	readers := []client.Reader{r.client}
	if r.opts.APIReader != nil {
		readers = append(readers, r.opts.APIReader)
	}
	for _, rd := range readers {
		err := rd.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{})
		if err == nil {
			return false, nil
		}
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("get node %s: %w", name, err)
		}
	}
	return true, nil
}

// releaseVolumesOf drops the node agent's finalizer from the LogicalVolumes of the removed node that
// are being deleted, when the controller was asked to; otherwise it says why they stay.
func (r *Reconciler) releaseVolumesOf(ctx context.Context, node string) error {
	var lvs topolvmv1.LogicalVolumeList
	if err := r.client.List(ctx, &lvs); err != nil {
		return fmt.Errorf("list LogicalVolumes: %w", err)
	}
	log := ctrl.LoggerFrom(ctx)
	var errs []error
	for i := range lvs.Items {
		lv := &lvs.Items[i]
		if lv.Spec.NodeName != node || lv.DeletionTimestamp.IsZero() ||
			!controllerutil.ContainsFinalizer(lv, topolvmv1.LogicalVolumeFinalizer) {
			continue
		}
		if !r.opts.ReleaseVolumes {
			log.Info("LogicalVolume of a removed node waits for its node; run the operator with --"+
				ReleaseVolumesFlag+" to release it", "node", node, "logicalVolume", lv.Name)
			continue
		}
		orig := lv.DeepCopy()
		controllerutil.RemoveFinalizer(lv, topolvmv1.LogicalVolumeFinalizer)
		if err := r.client.Patch(
			ctx,
			lv,
			client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}),
		); err != nil {
			errs = append(errs, fmt.Errorf("release LogicalVolume %s of node %s: %w", lv.Name, node, err))
			continue
		}
		log.Info("Released the LogicalVolume of a removed node", "node", node, "logicalVolume", lv.Name)
	}
	return errors.Join(errs...)
}

func (r *Reconciler) releaseFinalizers(ctx context.Context, node string) error {
	var vgs lvmv1alpha1.LVMVolumeGroupList
	if err := r.client.List(ctx, &vgs, client.InNamespace(r.namespace)); err != nil {
		return fmt.Errorf("list LVMVolumeGroups: %w", err)
	}
	finalizer := lvmv1alpha1.CleanupFinalizerPrefix + node
	var errs []error
	for i := range vgs.Items {
		vg := &vgs.Items[i]
		orig := vg.DeepCopy()
		if !controllerutil.RemoveFinalizer(vg, finalizer) {
			continue
		}
		if err := r.client.Patch(
			ctx,
			vg,
			client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}),
		); err != nil {
			errs = append(errs, fmt.Errorf("release finalizer of node %s on LVMVolumeGroup %s: %w", node, vg.Name, err))
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Released the finalizer of a deleted node", "node", node, "LVMVolumeGroup", vg.Name)
	}
	return errors.Join(errs...)
}

func (r *Reconciler) deleteNodeStatus(ctx context.Context, node string) error {
	st := &lvmv1alpha1.LVMVolumeGroupNodeStatus{}
	st.Name, st.Namespace = node, r.namespace
	if err := r.client.Delete(ctx, st); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete LVMVolumeGroupNodeStatus of node %s: %w", node, err)
	}
	return nil
}
