package lvmcluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	lvmv1alpha1ac "github.com/lvm-operator/lvm-operator/api/v1alpha1/applyconfiguration/api/v1alpha1"
)

// volumeGroupFor projects a device class into the LVMVolumeGroup the node agents consume.
func volumeGroupFor(
	c *lvmv1alpha1.LVMCluster,
	dc *lvmv1alpha1.DeviceClass,
	namespace string,
) *lvmv1alpha1ac.LVMVolumeGroupApplyConfiguration {
	spec := lvmv1alpha1ac.LVMVolumeGroupSpec().WithDefault(dc.Default)
	if dc.DeviceDiscoveryPolicy != "" {
		spec.WithDeviceDiscoveryPolicy(dc.DeviceDiscoveryPolicy)
	}
	if s := dc.DeviceSelector; s != nil {
		sel := lvmv1alpha1ac.DeviceSelector().WithPaths(s.Paths...).WithOptionalPaths(s.OptionalPaths...)
		if s.ForceWipeDevicesAndDestroyAllData != nil {
			sel.WithForceWipeDevicesAndDestroyAllData(*s.ForceWipeDevicesAndDestroyAllData)
		}
		spec.WithDeviceSelector(sel)
	}
	if dc.NodeSelector != nil {
		spec.WithNodeSelector(*dc.NodeSelector)
	}
	if t := dc.ThinPoolConfig; t != nil {
		tp := lvmv1alpha1ac.ThinPoolConfig().WithName(t.Name).WithSizePercent(t.SizePercent).
			WithOverprovisionRatio(t.OverprovisionRatio).
			WithChunkSizeCalculationPolicy(t.ChunkSizeCalculationPolicy).
			WithMetadataSizeCalculationPolicy(t.MetadataSizeCalculationPolicy)
		if t.ChunkSize != nil {
			tp.WithChunkSize(*t.ChunkSize)
		}
		if t.MetadataSize != nil {
			tp.WithMetadataSize(*t.MetadataSize)
		}
		if ae := t.AutoExtend; ae != nil {
			tp.WithAutoExtend(lvmv1alpha1ac.ThinPoolAutoExtend().WithThresholdPercent(ae.ThresholdPercent).
				WithPercent(ae.Percent).WithMaxSizePercent(ae.MaxSizePercent))
		}
		spec.WithThinPoolConfig(tp)
	}
	if r := dc.RAIDConfig; r != nil {
		rc := lvmv1alpha1ac.RAIDConfig().WithType(r.Type)
		if r.Mirrors != nil {
			rc.WithMirrors(*r.Mirrors)
		}
		if r.Stripes != nil {
			rc.WithStripes(*r.Stripes)
		}
		if r.StripeSize != nil {
			rc.WithStripeSize(*r.StripeSize)
		}
		spec.WithRAIDConfig(rc)
	}
	return lvmv1alpha1ac.LVMVolumeGroup(dc.Name, namespace).
		WithLabels(ownerLabels(c)).
		WithOwnerReferences(controllerRef(c)).
		WithFinalizers(lvmv1alpha1.VolumeGroupCleanupFinalizer).
		WithSpec(spec)
}

func applyVolumeGroups(ctx context.Context, s *scope) error {
	wanted := map[string]bool{}
	for i := range s.cluster.Spec.Storage.DeviceClasses {
		dc := &s.cluster.Spec.Storage.DeviceClasses[i]
		wanted[dc.Name] = true
		deleting, err := beingDeleted(ctx, s, dc.Name)
		if err != nil {
			return err
		}
		if deleting {
			// Made again once it is gone (its deletion brings the LVMCluster back): an object being
			// deleted takes no new finalizer, and the nodes are tearing its volume group down.
			continue
		}
		if err := applyOperand(ctx, s.client, volumeGroupFor(s.cluster, dc, s.opts.Namespace)); err != nil {
			return fmt.Errorf("apply LVMVolumeGroup %s/%s: %w", s.opts.Namespace, dc.Name, err)
		}
	}
	// A removed device class: deleting its LVMVolumeGroup makes every node tear the VG down (the
	// operator's finalizer holds the object until no node claims it: internal/controller/vgcleanup).
	return deleteStale(ctx, s, &lvmv1alpha1.LVMVolumeGroupList{}, wanted, client.InNamespace(s.opts.Namespace))
}

func removeVolumeGroups(ctx context.Context, s *scope) (bool, error) {
	return removeLabelled(&lvmv1alpha1.LVMVolumeGroupList{}, client.InNamespace(s.opts.Namespace))(ctx, s)
}

// beingDeleted reports whether the LVMVolumeGroup name exists, as cached, and is being deleted.
func beingDeleted(ctx context.Context, s *scope, name string) (bool, error) {
	vg := &lvmv1alpha1.LVMVolumeGroup{}
	err := s.client.Get(ctx, client.ObjectKey{Namespace: s.opts.Namespace, Name: name}, vg)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get LVMVolumeGroup %s/%s: %w", s.opts.Namespace, name, err)
	}
	return !vg.DeletionTimestamp.IsZero(), nil
}
