package kubelet

import (
	"context"
	"fmt"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
)

// needsNodeExpansion reports whether the resizer left the claim for the node to expand: condition
// FileSystemResizePending, or allocatedResourceStatuses[storage] NodeResizePending.
func needsNodeExpansion(pvc *corev1.PersistentVolumeClaim) bool {
	if pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] == corev1.PersistentVolumeClaimNodeResizePending {
		return true
	}
	for _, c := range pvc.Status.Conditions {
		if c.Type == corev1.PersistentVolumeClaimFileSystemResizePending && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// claimChanged starts the node expansion of a claim published on this node that needs one.
func (k *Kubelet) claimChanged(ctx context.Context, obj any) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok || !needsNodeExpansion(pvc) {
		return
	}
	if _, ok := k.volumes.ForClaim(pvc.Namespace + "/" + pvc.Name); !ok {
		return
	}
	go k.expandClaim(ctx, pvc.Namespace+"/"+pvc.Name)
}

// expandClaim expands a published claim that needs node expansion, retrying until it succeeds, the
// claim no longer needs it or ctx ends. One expansion per claim runs at a time.
func (k *Kubelet) expandClaim(ctx context.Context, claim string) {
	k.mu.Lock()
	if k.expanding[claim] {
		k.mu.Unlock()
		return
	}
	k.expanding[claim] = true
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		delete(k.expanding, claim)
		k.mu.Unlock()
	}()
	log := ctrl.LoggerFrom(ctx).WithValues("claim", claim)
	err := retryUntil(ctx, k.clock, func() error { return k.expandOnce(ctrl.LoggerInto(ctx, log), claim) })
	if err != nil && ctx.Err() == nil {
		log.Error(err, "Node expansion failed")
	}
}

// expandOnce calls NodeExpandVolume to the PV's capacity and finishes the claim's resize as kubelet
// does: status.capacity becomes the PV's capacity, the resize conditions and the storage entry of
// allocatedResourceStatuses are removed.
func (k *Kubelet) expandOnce(ctx context.Context, claim string) error {
	v, ok := k.volumes.ForClaim(claim)
	if !ok {
		return nil
	}
	ns, name := splitKey(claim)
	claims := k.client.CoreV1().PersistentVolumeClaims(ns)
	pvc, err := claims.Get(ctx, name, metav1.GetOptions{})
	if err != nil || !needsNodeExpansion(pvc) {
		return err
	}
	pv, err := k.client.CoreV1().PersistentVolumes().Get(ctx, v.PV, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get PV %s: %w", v.PV, err)
	}
	size := pv.Spec.Capacity[corev1.ResourceStorage]
	if _, err := k.csi.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{
		VolumeId: v.Handle, VolumePath: v.Path, StagingTargetPath: v.Staging, VolumeCapability: v.Capability,
		CapacityRange: &csi.CapacityRange{RequiredBytes: size.Value()},
	}); err != nil {
		return fmt.Errorf("NodeExpandVolume %s: %w", v.Handle, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := claims.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.Status.Capacity == nil {
			cur.Status.Capacity = corev1.ResourceList{}
		}
		cur.Status.Capacity[corev1.ResourceStorage] = size
		conds := cur.Status.Conditions[:0]
		for _, c := range cur.Status.Conditions {
			if c.Type != corev1.PersistentVolumeClaimFileSystemResizePending && c.Type != corev1.PersistentVolumeClaimResizing {
				conds = append(conds, c)
			}
		}
		cur.Status.Conditions = conds
		delete(cur.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
		_, err = claims.UpdateStatus(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("finish resize of claim %s: %w", claim, err)
	}
	ctrl.LoggerFrom(ctx).Info("Volume expanded on node", "size", size.String())
	return nil
}

// splitKey splits namespace/name.
func splitKey(key string) (namespace, name string) {
	namespace, name, _ = strings.Cut(key, "/")
	return namespace, name
}
