package lvmcluster

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	storagev1ac "k8s.io/client-go/applyconfigurations/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// storageClassFor builds the StorageClass of a device class. markDefault says whether it carries the
// default-class annotation.
func storageClassFor(
	c *lvmv1alpha1.LVMCluster,
	dc *lvmv1alpha1.DeviceClass,
	markDefault bool,
) *storagev1ac.StorageClassApplyConfiguration {
	fstype := dc.FilesystemType
	if fstype == "" {
		fstype = lvmv1alpha1.FilesystemTypeXFS
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingWaitForFirstConsumer
	params := map[string]string{}
	var extraLabels map[string]string
	if o := dc.StorageClassOptions; o != nil {
		if o.ReclaimPolicy != nil {
			reclaim = *o.ReclaimPolicy
		}
		if o.VolumeBindingMode != nil {
			binding = *o.VolumeBindingMode
		}
		maps.Copy(params, o.AdditionalParameters)
		extraLabels = o.AdditionalLabels
	}
	// The driver's own parameters win over anything additional (the schema also forbids them).
	params[driver.ParamDeviceClass] = dc.Name
	params[driver.ParamFSType] = string(fstype)

	sc := storagev1ac.StorageClass(StorageClassName(dc.Name)).
		WithLabels(withLabels(extraLabels, ownerLabels(c), map[string]string{LabelDeviceClass: dc.Name})).
		WithProvisioner(driver.Name).
		WithParameters(params).
		WithReclaimPolicy(reclaim).
		WithVolumeBindingMode(binding).
		WithAllowVolumeExpansion(true)
	if markDefault {
		sc.WithAnnotations(map[string]string{AnnotationDefaultStorageClass: "true"})
	}
	return sc
}

// otherDefaultStorageClass reports whether a default StorageClass exists that is not one of ours:
// a class of a device class, or one the operator made. A user's copy of ours is not ours.
func otherDefaultStorageClass(ctx context.Context, cl client.Client, c *lvmv1alpha1.LVMCluster) (bool, error) {
	var list storagev1.StorageClassList
	if err := cl.List(ctx, &list); err != nil {
		return false, fmt.Errorf("list StorageClasses: %w", err)
	}
	ours := wantedClassNames(c)
	for i := range list.Items {
		sc := &list.Items[i]
		if sc.Annotations[AnnotationDefaultStorageClass] != "true" {
			continue
		}
		if ours[sc.Name] || madeByOperator(sc) {
			continue
		}
		return true, nil
	}
	return false, nil
}

// applyStorageClasses writes the StorageClass of every device class. StorageClass parameters,
// provisioner, reclaim policy and binding mode are immutable in the API, so a StorageClass whose
// immutable fields drifted is deleted and recreated.
func applyStorageClasses(ctx context.Context, s *scope) error {
	otherDefault, err := otherDefaultStorageClass(ctx, s.client, s.cluster)
	if err != nil {
		return err
	}
	for i := range s.cluster.Spec.Storage.DeviceClasses {
		dc := &s.cluster.Spec.Storage.DeviceClasses[i]
		want := storageClassFor(s.cluster, dc, dc.Default && !otherDefault)
		if err := recreateIfImmutableDrifted(ctx, s.client, want); err != nil {
			return err
		}
		if err := applyOperand(ctx, s.client, want); err != nil {
			return fmt.Errorf("apply StorageClass %s: %w", *want.Name, err)
		}
	}
	return deleteStale(ctx, s, &storagev1.StorageClassList{}, wantedClassNames(s.cluster))
}

func recreateIfImmutableDrifted(
	ctx context.Context,
	cl client.Client,
	want *storagev1ac.StorageClassApplyConfiguration,
) error {
	var have storagev1.StorageClass
	err := cl.Get(ctx, client.ObjectKey{Name: *want.Name}, &have)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get StorageClass %s: %w", *want.Name, err)
	}
	same := have.Provisioner == *want.Provisioner &&
		maps.Equal(have.Parameters, want.Parameters) &&
		have.ReclaimPolicy != nil && *have.ReclaimPolicy == *want.ReclaimPolicy &&
		have.VolumeBindingMode != nil && *have.VolumeBindingMode == *want.VolumeBindingMode
	if same {
		return nil
	}
	if err := cl.Delete(ctx, &have, client.Preconditions{UID: &have.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete drifted StorageClass %s: %w", have.Name, err)
	}
	return nil
}

// wantedClassNames are the StorageClass/VolumeSnapshotClass names the spec asks for.
func wantedClassNames(c *lvmv1alpha1.LVMCluster) map[string]bool {
	out := make(map[string]bool, len(c.Spec.Storage.DeviceClasses))
	for _, dc := range c.Spec.Storage.DeviceClasses {
		out[StorageClassName(dc.Name)] = true
	}
	return out
}
