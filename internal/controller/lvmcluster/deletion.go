package lvmcluster

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// reconcileDelete tears the operands down once no PVC uses our StorageClasses, in teardownOrder; then
// the LVMCluster's finalizer goes. Each wait is woken by a watch, not a timer.
func reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.cluster, Finalizer) {
		return ctrl.Result{}, nil
	}
	claims, err := claimsUsingOurClasses(ctx, s.client, s.cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(claims) > 0 {
		msg := fmt.Sprintf("deletion waits for %d PersistentVolumeClaim(s) using lvms StorageClasses: %s",
			len(claims), joinCapped(claims, maxConditionItems))
		s.blockDeletion(ReasonPVCsExist, msg)
		s.recorder.Eventf(s.cluster, nil, corev1.EventTypeWarning, ReasonPVCsExist, "Delete", "%s", msg)
		return ctrl.Result{}, nil
	}
	for _, u := range teardownOrder() {
		if u.name == unitVolumeGroups {
			// The classes are gone, so no new claim can be provisioned: count the claims once more
			// before the volume groups go.
			if claims, err := claimsUsingOurClasses(ctx, s.client, s.cluster); err != nil || len(claims) > 0 {
				s.blockDeletion(ReasonPVCsExist, fmt.Sprintf("deletion waits for PersistentVolumeClaim(s): %s",
					joinCapped(claims, maxConditionItems)))
				return ctrl.Result{}, err
			}
		}
		gone, err := u.remove(ctx, s)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("remove %s: %w", u.name, err)
		}
		if !gone {
			s.blockDeletion(ReasonTearingDown, "waiting for "+u.name+" to be removed")
			return ctrl.Result{}, nil
		}
	}
	controllerutil.RemoveFinalizer(s.cluster, Finalizer)
	if err := s.client.Patch(ctx, s.cluster, client.MergeFrom(s.original)); err != nil {
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	return ctrl.Result{}, nil
}

// unitVolumeGroups names the LVMVolumeGroups unit.
const unitVolumeGroups = "LVMVolumeGroups"

// unitNodeAgentPolicy names the node agent admission policy's unit.
const unitNodeAgentPolicy = "NodeAgentPolicy"

// teardownOrder is the order operands are removed in: the StorageClasses and VolumeSnapshotClasses
// first, so that nothing new is provisioned while the volume groups go, and the snapshot metadata
// endpoint; then the volume groups (every node removes its VG, then its finalizer), which need the
// node agents; then the node agents, the policy that bounds them, the SecurityContextConstraints and
// the CSIDriver.
func teardownOrder() []unit {
	byName := map[string]unit{}
	for _, u := range units() {
		byName[u.name] = u
	}
	names := []string{"StorageClasses", "VolumeSnapshotClasses", "SnapshotMetadata", unitVolumeGroups, "NodeDaemonSet",
		unitNodeAgentPolicy, "SecurityContextConstraints", "CSIDriver"}
	out := make([]unit, 0, len(names))
	for _, n := range names {
		out = append(out, byName[n])
	}
	return out
}

func (s *scope) blockDeletion(reason, msg string) {
	s.setCondition(metav1.Condition{Type: lvmv1alpha1.ConditionDeletionBlocked, Status: metav1.ConditionTrue,
		Reason: reason, Message: msg})
}

// claimsUsingOurClasses lists the PVCs (namespace/name) whose StorageClass is one of this
// LVMCluster's, or any other class of our driver on one of its device classes (a user's copy of
// ours): their volumes live in the volume groups that deletion tears down.
func claimsUsingOurClasses(ctx context.Context, cl client.Client, c *lvmv1alpha1.LVMCluster) ([]string, error) {
	ours, err := classesOnOurDeviceClasses(ctx, cl, c)
	if err != nil {
		return nil, err
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := cl.List(ctx, &pvcs); err != nil {
		return nil, fmt.Errorf("list PersistentVolumeClaims: %w", err)
	}
	var out []string
	for i := range pvcs.Items {
		p := &pvcs.Items[i]
		if p.Spec.StorageClassName != nil && ours[*p.Spec.StorageClassName] {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// classesOnOurDeviceClasses are the names of this LVMCluster's StorageClasses and of every other
// StorageClass of our driver whose device class is one of the LVMCluster's.
func classesOnOurDeviceClasses(
	ctx context.Context,
	cl client.Client,
	c *lvmv1alpha1.LVMCluster,
) (map[string]bool, error) {
	ours := wantedClassNames(c)
	var classes storagev1.StorageClassList
	if err := cl.List(ctx, &classes); err != nil {
		return nil, fmt.Errorf("list StorageClasses: %w", err)
	}
	for i := range classes.Items {
		sc := &classes.Items[i]
		if sc.Provisioner == driver.Name && ours[StorageClassName(sc.Parameters[driver.ParamDeviceClass])] {
			ours[sc.Name] = true
		}
	}
	return ours, nil
}
