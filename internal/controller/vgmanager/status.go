package vgmanager

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	lvmv1alpha1ac "github.com/lvm-operator/lvm-operator/api/v1alpha1/applyconfiguration/api/v1alpha1"
)

// writeStatus is the one status write at the end of a reconcile: this node's entry for the volume
// group, or its removal once the VG is torn down.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	switch {
	case s.tornDown:
		return r.removeStatus(ctx, s.vg.Name)
	case s.status != nil:
		st := *s.status
		st.DeviceDiscoveryPolicy = discoveryPolicy(s.vg.Spec)
		if r.statusUnchanged(ctx, st) {
			return nil
		}
		return r.applyStatus(ctx, s.vg.Name, st)
	}
	return nil
}

// statusUnchanged reports whether this node's LVMVolumeGroupNodeStatus, as cached, already holds
// entry st. A reconcile that changed nothing then writes nothing: every node reconciles each of
// its volume groups once a minute (DefaultDiscoveryInterval) and applied the same entry each time,
// 120 writes per node and hour with two volume groups (the scale benchmark, docs/scale.md). Any
// doubt (not cached yet, a read error) answers false.
func (r *Reconciler) statusUnchanged(ctx context.Context, st lvmv1alpha1.VGStatus) bool {
	entries, err := r.ownEntries(ctx)
	cur, ok := entries[st.Name]
	if err != nil || !ok {
		return false
	}
	want, err := json.Marshal(st)
	if err != nil {
		return false
	}
	got, err := json.Marshal(cur)
	return err == nil && bytes.Equal(got, want)
}

// applyStatus applies the entry of volume group vg in this node's LVMVolumeGroupNodeStatus. Each
// volume group has its own field owner, so applying one entry leaves the others alone.
func (r *Reconciler) applyStatus(ctx context.Context, vg string, st lvmv1alpha1.VGStatus) error {
	entry := lvmv1alpha1ac.VGStatus().WithName(st.Name).WithStatus(st.Status).WithDevices(st.Devices...)
	if st.DeviceDiscoveryPolicy != "" {
		entry.WithDeviceDiscoveryPolicy(st.DeviceDiscoveryPolicy)
	}
	if rs := st.RAIDStatus; rs != nil {
		entry.WithRAIDStatus(raidStatusApply(rs))
	}
	if st.Reason != "" {
		entry.WithReason(st.Reason)
	}
	for _, e := range st.Excluded {
		entry.WithExcluded(lvmv1alpha1ac.ExcludedDevice().WithName(e.Name).WithReasons(e.Reasons...))
	}
	if c := st.Capacity; c != nil {
		ac := lvmv1alpha1ac.VGCapacity().WithSize(c.Size).WithFree(c.Free)
		if tp := c.ThinPool; tp != nil {
			ac.WithThinPool(lvmv1alpha1ac.ThinPoolCapacity().WithName(tp.Name).WithSize(tp.Size).
				WithDataPercent(tp.DataPercent).WithMetadataPercent(tp.MetadataPercent))
		}
		entry.WithCapacity(ac)
	}
	ac := lvmv1alpha1ac.LVMVolumeGroupNodeStatus(r.nodeName, r.namespace).
		WithSpec(lvmv1alpha1ac.LVMVolumeGroupNodeStatusSpec().WithLiveNodeStatus(entry))
	if err := r.client.Apply(ctx, ac, client.FieldOwner(FieldOwner(vg)), client.ForceOwnership); err != nil {
		return fmt.Errorf(
			"apply status of VG %s in LVMVolumeGroupNodeStatus %s/%s: %w",
			vg,
			r.namespace,
			r.nodeName,
			err,
		)
	}
	return nil
}

// removeStatus drops the entry of volume group vg: applying nothing with its field owner removes
// what that owner had set.
func (r *Reconciler) removeStatus(ctx context.Context, vg string) error {
	err := r.client.Get(
		ctx,
		client.ObjectKey{Namespace: r.namespace, Name: r.nodeName},
		&lvmv1alpha1.LVMVolumeGroupNodeStatus{},
	)
	if apierrors.IsNotFound(err) {
		return nil // applying would create an empty object
	}
	if err != nil {
		return fmt.Errorf("get LVMVolumeGroupNodeStatus %s/%s: %w", r.namespace, r.nodeName, err)
	}
	ac := lvmv1alpha1ac.LVMVolumeGroupNodeStatus(r.nodeName, r.namespace)
	if err := r.client.Apply(ctx, ac, client.FieldOwner(FieldOwner(vg)), client.ForceOwnership); err != nil {
		return fmt.Errorf(
			"remove status of VG %s from LVMVolumeGroupNodeStatus %s/%s: %w",
			vg,
			r.namespace,
			r.nodeName,
			err,
		)
	}
	return nil
}

// raidStatusApply is the apply configuration of a RAID status.
func raidStatusApply(rs *lvmv1alpha1.RAIDStatus) *lvmv1alpha1ac.RAIDStatusApplyConfiguration {
	ac := lvmv1alpha1ac.RAIDStatus().WithStatus(rs.Status).WithMemberCount(rs.MemberCount).
		WithDegradedMemberCount(rs.DegradedMemberCount)
	if rs.MinSyncPercent != nil {
		ac.WithMinSyncPercent(*rs.MinSyncPercent)
	}
	for _, h := range rs.LVHealth {
		lv := lvmv1alpha1ac.RAIDLVHealth().WithName(h.Name).WithRAIDType(h.RAIDType).WithSyncPercent(h.SyncPercent)
		if h.HealthStatus != "" {
			lv.WithHealthStatus(h.HealthStatus)
		}
		ac.WithLVHealth(lv)
	}
	return ac
}
