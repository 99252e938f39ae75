package placement

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-helpers/storage/volume"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// Why explains the claim key with its Warning events; operatorNamespace holds the LVMCluster and the
// node statuses. It lists core/v1 Events with the field selector EventInvolvedObjectName, which a
// controller-runtime cache cannot answer without an index: read through the API server.
func Why(ctx context.Context, c client.Reader, operatorNamespace string, key client.ObjectKey) (*Report, error) {
	var pvc corev1.PersistentVolumeClaim
	if err := c.Get(ctx, key, &pvc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("PersistentVolumeClaim %s not found (use -n for another namespace)", key)
		}
		return nil, fmt.Errorf("get PersistentVolumeClaim %s: %w", key, err)
	}
	r, err := Explain(ctx, c, operatorNamespace, &pvc)
	if err != nil || r.Bound != nil {
		return r, err
	}
	events, err := WarningEvents(ctx, c, &pvc)
	if err != nil {
		return nil, err
	}
	r.Events = events
	return r, nil
}

// Explain is Why for a claim the caller has already read, without its events.
func Explain(
	ctx context.Context, c client.Reader, operatorNamespace string, pvc *corev1.PersistentVolumeClaim,
) (*Report, error) {
	r := &Report{Namespace: pvc.Namespace, Claim: pvc.Name, Phase: string(pvc.Status.Phase)}
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		r.RequestedBytes = q.Value()
	}
	if pvc.Status.Phase == corev1.ClaimBound {
		bound, err := boundVolume(ctx, c, pvc.Spec.VolumeName)
		if err != nil {
			return nil, err
		}
		r.Bound = bound
		r.Verdict = r.verdict()
		return r, nil
	}
	r.SelectedNode = pvc.Annotations[volume.AnnSelectedNode]
	if err := r.resolveStorageClass(ctx, c, operatorNamespace, pvc.Spec.StorageClassName); err != nil {
		return nil, err
	}
	if r.DeviceClass != "" {
		nodes, err := nodeFits(ctx, c, operatorNamespace, r.DeviceClass, r.RequestedBytes)
		if err != nil {
			return nil, err
		}
		r.Nodes = nodes
	}
	r.Verdict = r.verdict()
	return r, nil
}

// boundVolume reads the PV of a Bound claim and its LogicalVolume.
func boundVolume(ctx context.Context, c client.Reader, pvName string) (*BoundVolume, error) {
	var pv corev1.PersistentVolume
	if err := c.Get(ctx, client.ObjectKey{Name: pvName}, &pv); err != nil {
		return nil, fmt.Errorf("get PersistentVolume %s of the claim: %w", pvName, err)
	}
	b := &BoundVolume{PersistentVolume: pv.Name, Node: PVNode(&pv)}
	if q, ok := pv.Spec.Capacity[corev1.ResourceStorage]; ok {
		b.SizeBytes = q.Value()
	}
	if pv.Spec.CSI == nil {
		return b, nil
	}
	b.Driver, b.VolumeID = pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle
	if b.Driver != driver.Name {
		return b, nil
	}
	var lvs topolvmv1.LogicalVolumeList
	if err := c.List(ctx, &lvs); err != nil {
		return nil, fmt.Errorf("list LogicalVolumes: %w", err)
	}
	for i := range lvs.Items {
		if lv := &lvs.Items[i]; lv.Status.VolumeID == b.VolumeID {
			b.Node, b.DeviceClass, b.SizeBytes = lv.Spec.NodeName, lv.Spec.DeviceClass, LogicalVolumeSize(lv)
		}
	}
	return b, nil
}

// resolveStorageClass sets the StorageClass fields and the device class, or StorageClassProblem.
func (r *Report) resolveStorageClass(
	ctx context.Context, c client.Reader, operatorNamespace string, name *string,
) error {
	if name == nil || *name == "" {
		r.StorageClassProblem = "the claim names no StorageClass and none was defaulted: " +
			"set spec.storageClassName (e.g. lvms-<device class>) in a new claim"
		return nil
	}
	r.StorageClass = *name
	var sc storagev1.StorageClass
	err := c.Get(ctx, client.ObjectKey{Name: *name}, &sc)
	if apierrors.IsNotFound(err) {
		r.StorageClassProblem = fmt.Sprintf("StorageClass %s does not exist: create it, or recreate the claim "+
			"with an existing storageClassName (kubectl get storageclass)", *name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get StorageClass %s: %w", *name, err)
	}
	r.Provisioner = sc.Provisioner
	if sc.VolumeBindingMode != nil {
		r.VolumeBindingMode = string(*sc.VolumeBindingMode)
	}
	if sc.Provisioner != driver.Name {
		r.StorageClassProblem = fmt.Sprintf("StorageClass %s is provisioned by %s, not by %s: lvms does not "+
			"provision this claim", *name, sc.Provisioner, driver.Name)
		return nil
	}
	r.DeviceClass = sc.Parameters[driver.ParamDeviceClass]
	if r.DeviceClass != "" {
		return nil
	}
	def, err := defaultDeviceClass(ctx, c, operatorNamespace)
	if err != nil {
		return err
	}
	if def == "" {
		r.StorageClassProblem = fmt.Sprintf("StorageClass %s names no device class (parameter %s) and no "+
			"LVMCluster in %s has a default device class", *name, driver.ParamDeviceClass, operatorNamespace)
		return nil
	}
	r.DeviceClass, r.DefaultDeviceClass = def, true
	return nil
}

// defaultDeviceClass is the device class marked default in the LVMClusters of namespace, or "".
func defaultDeviceClass(ctx context.Context, c client.Reader, namespace string) (string, error) {
	var clusters lvmv1alpha1.LVMClusterList
	if err := c.List(ctx, &clusters, client.InNamespace(namespace)); err != nil {
		return "", fmt.Errorf("list LVMClusters in %s: %w", namespace, err)
	}
	slices.SortFunc(clusters.Items, func(a, b lvmv1alpha1.LVMCluster) int { return cmp.Compare(a.Name, b.Name) })
	for _, lc := range clusters.Items {
		for _, dc := range lc.Spec.Storage.DeviceClasses {
			if dc.Default {
				return dc.Name, nil
			}
		}
	}
	return "", nil
}
