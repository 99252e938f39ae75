package vgmanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// A node's claim on a volume group is its entry in its own LVMVolumeGroupNodeStatus: written before
// the volume group is built, dropped once it is torn down. The operator's finalizer
// (lvmv1alpha1.VolumeGroupCleanupFinalizer) holds a deleted LVMVolumeGroup until no node has an
// entry for it. Before, each node held a finalizer of its own on the shared LVMVolumeGroup: every
// node joining rewrote that object, which the API server then sent to every agent watching it — N²
// events, each carrying up to N finalizers, for N nodes (docs/scale.md).

// ownEntries returns this node's LVMVolumeGroupNodeStatus entries by volume group, as cached (none
// while the object does not exist).
func (r *Reconciler) ownEntries(ctx context.Context) (map[string]lvmv1alpha1.VGStatus, error) {
	var st lvmv1alpha1.LVMVolumeGroupNodeStatus
	err := r.client.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.nodeName}, &st)
	if client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("get LVMVolumeGroupNodeStatus %s/%s: %w", r.namespace, r.nodeName, err)
	}
	out := make(map[string]lvmv1alpha1.VGStatus, len(st.Spec.LiveNodeStatus))
	for _, e := range st.Spec.LiveNodeStatus {
		out[e.Name] = e
	}
	return out, nil
}

// claimed reports whether this node has claimed vg: entries (ownEntries) has one for vg, or vg
// carries the per-node finalizer an older agent of this node put on it.
func (r *Reconciler) claimed(entries map[string]lvmv1alpha1.VGStatus, vg *lvmv1alpha1.LVMVolumeGroup) bool {
	_, ok := entries[vg.Name]
	return ok || controllerutil.ContainsFinalizer(vg, Finalizer(r.nodeName))
}

// ensureClaim writes this node's claim before anything is built: a Progressing entry. Then it reads
// the LVMVolumeGroup past the cache: a deletion that began before the claim was written may have
// found no claim of this node and let the object go, so a volume group built now would outlive it.
// The operator reads the claims past its cache too, after the deletion began; one of the two reads
// sees the other's write. Until that read says the object is not being deleted, the claim stays
// unconfirmed and nothing is built, however long the cache takes to show the deletion. A node with
// a confirmed claim drops the finalizer an older agent put on the object.
func (r *Reconciler) ensureClaim(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.claimed && !r.unconfirmed(s.vg.UID) {
		return ctrl.Result{}, r.dropLegacyFinalizer(ctx, s.vg)
	}
	if !s.claimed {
		claim := lvmv1alpha1.VGStatus{Name: s.vg.Name, Status: lvmv1alpha1.VGStatusProgressing,
			Reason:                "claimed by this node, which builds the volume group next",
			DeviceDiscoveryPolicy: discoveryPolicy(s.vg.Spec)}
		r.setUnconfirmed(s.vg.UID, true)
		if err := r.applyStatus(ctx, s.vg.Name, claim); err != nil {
			return ctrl.Result{}, err
		}
	}
	live := &lvmv1alpha1.LVMVolumeGroup{}
	err := r.reader.Get(ctx, client.ObjectKeyFromObject(s.vg), live)
	if apierrors.IsNotFound(err) || (err == nil && (!live.DeletionTimestamp.IsZero() || live.UID != s.vg.UID)) {
		// Gone or going: a later reconcile tears down (nothing built) and drops the claim.
		return ctrl.Result{}, fmt.Errorf("%w: LVMVolumeGroup %s is being deleted", errLostRace, s.vg.Name)
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("get LVMVolumeGroup %s: %w", s.vg.Name, err)
	}
	r.setUnconfirmed(s.vg.UID, false)
	return ctrl.Result{}, nil
}

// unconfirmed reports whether this node's claim on the LVMVolumeGroup of uid is written but not yet
// confirmed by a read past the cache (in this process: after a restart the cache is fresh). The
// UIDs of objects that went stay marked; they never come back.
func (r *Reconciler) unconfirmed(uid types.UID) bool {
	r.claimMu.Lock()
	defer r.claimMu.Unlock()
	return r.pendingClaims[uid]
}

func (r *Reconciler) setUnconfirmed(uid types.UID, pending bool) {
	r.claimMu.Lock()
	defer r.claimMu.Unlock()
	if pending {
		r.pendingClaims[uid] = true
	} else {
		delete(r.pendingClaims, uid)
	}
}

// dropLegacyFinalizer removes this node's per-node finalizer from vg, if an older agent put it there:
// a JSON patch that tests the entry at its index and removes it, so it needs no resourceVersion and
// never removes another node's (a shifted list fails the test, and the reconcile is retried).
func (r *Reconciler) dropLegacyFinalizer(ctx context.Context, vg *lvmv1alpha1.LVMVolumeGroup) error {
	fin := Finalizer(r.nodeName)
	i := slices.Index(vg.Finalizers, fin)
	if i < 0 {
		return nil
	}
	path := fmt.Sprintf("/metadata/finalizers/%d", i)
	body, err := json.Marshal([]map[string]string{
		{"op": "test", "path": path, "value": fin},
		{"op": "remove", "path": path},
	})
	if err != nil {
		return fmt.Errorf("finalizer patch: %w", err)
	}
	err = r.client.Patch(ctx, vg, client.RawPatch(types.JSONPatchType, body))
	if apierrors.IsNotFound(err) {
		return nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) &&
		(status.Status().Code == http.StatusUnprocessableEntity || apierrors.IsConflict(err)) {
		// The list changed under the test: read it again.
		return fmt.Errorf("%w: %w", errLostRace, err)
	}
	if err != nil {
		return fmt.Errorf("remove finalizer %s from LVMVolumeGroup %s: %w", fin, vg.Name, err)
	}
	return nil
}

// forgetVolumeGroup drops this node's entry for an LVMVolumeGroup that no longer exists (a claim
// written just before it went, or an entry left when its finalizers were removed by hand).
func (r *Reconciler) forgetVolumeGroup(ctx context.Context, name string) error {
	entries, err := r.ownEntries(ctx)
	if _, ok := entries[name]; err != nil || !ok {
		return err
	}
	return r.removeStatus(ctx, name)
}
