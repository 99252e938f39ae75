package noderemoval

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/placement"
)

// The controller reads the PersistentVolumes of the removed node and deletes their claims (only
// with Options.DeleteClaims; the role always grants it).
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;delete

// nodeOfVolume maps a PersistentVolume of the topolvm.io driver to the node its affinity pins it to.
func nodeOfVolume(_ context.Context, o client.Object) []reconcile.Request {
	pv, ok := o.(*corev1.PersistentVolume)
	if !ok || !ofDriver(pv) {
		return nil
	}
	if node := placement.PVNode(pv); node != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: node}}}
	}
	return nil
}

// ofDriver tells whether pv is a volume of the topolvm.io CSI driver.
func ofDriver(pv *corev1.PersistentVolume) bool {
	return pv.Spec.CSI != nil && pv.Spec.CSI.Driver == driver.Name
}

// deleteClaimsOf handles the claims bound to the topolvm.io PersistentVolumes that the removed node
// holds: with Options.DeleteClaims it deletes them, otherwise it logs, once per claim and
// reconcile, that they stay and which flag would delete them.
func (r *Reconciler) deleteClaimsOf(ctx context.Context, node string) error {
	var pvs corev1.PersistentVolumeList
	if err := r.client.List(ctx, &pvs); err != nil {
		return fmt.Errorf("list PersistentVolumes: %w", err)
	}
	var errs []error
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		if !ofDriver(pv) || placement.PVNode(pv) != node || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == "" {
			continue
		}
		pvc, err := r.boundClaim(ctx, pv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if pvc == nil || !pvc.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.deleteClaim(ctx, node, pv, pvc); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// boundClaim is the claim that pv's claimRef names, if it is that very claim (same UID) and bound to
// pv; nil otherwise, as when a claim of the same name was created anew.
func (r *Reconciler) boundClaim(
	ctx context.Context,
	pv *corev1.PersistentVolume,
) (*corev1.PersistentVolumeClaim, error) {
	ref := pv.Spec.ClaimRef
	var pvc corev1.PersistentVolumeClaim
	err := r.client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &pvc)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get PersistentVolumeClaim %s/%s of PersistentVolume %s: %w",
			ref.Namespace, ref.Name, pv.Name, err)
	}
	if pvc.UID != ref.UID || pvc.Spec.VolumeName != pv.Name {
		return nil, nil
	}
	return &pvc, nil
}

// deleteClaim deletes pvc, bound to pv of the removed node, if the controller was asked to. The
// delete holds only for the UID of pv's claimRef, so a claim recreated under the same name (after
// the cache was read) stays.
func (r *Reconciler) deleteClaim(
	ctx context.Context,
	node string,
	pv *corev1.PersistentVolume,
	pvc *corev1.PersistentVolumeClaim,
) error {
	log := ctrl.LoggerFrom(ctx).WithValues(
		"node", node, "persistentVolumeClaim", klog.KObj(pvc), "persistentVolume", pv.Name)
	if !r.opts.DeleteClaims {
		log.Info("Claim of a removed node stays; run the operator with --" + DeleteClaimsFlag + " to delete it")
		return nil
	}
	uid := pv.Spec.ClaimRef.UID
	err := r.client.Delete(ctx, pvc, client.Preconditions{UID: &uid})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil // gone already, or another claim of the same name: not the one bound to pv
	case err != nil:
		return fmt.Errorf("delete PersistentVolumeClaim %s/%s of node %s: %w", pvc.Namespace, pvc.Name, node, err)
	}
	log.Info("Deleted the claim of a removed node")
	return nil
}
