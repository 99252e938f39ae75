package demo

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

// The VolumeSnapshot API, used as unstructured objects.
var (
	snapshotGVK = schema.GroupVersionKind{
		Group:   "snapshot.storage.k8s.io",
		Version: "v1",
		Kind:    "VolumeSnapshot",
	}
	snapshotContentGVK = schema.GroupVersionKind{
		Group:   "snapshot.storage.k8s.io",
		Version: "v1",
		Kind:    "VolumeSnapshotContent",
	}
)

func (k *kube) createClaim(ctx context.Context, name, size string, source *corev1.TypedObjectReference) error {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: new(storageClass),
			AccessModes:      []corev1.PersistentVolumeAccessMode{k.accessMode},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse(size)}},
			DataSourceRef: source,
		},
	}
	if err := k.c.Create(ctx, pvc); err != nil {
		return fmt.Errorf("create PVC %s: %w", name, err)
	}
	return nil
}

// boundClaim waits until the claim is Bound.
func (k *kube) boundClaim(ctx context.Context, name string) (*corev1.PersistentVolumeClaim, error) {
	var pvc corev1.PersistentVolumeClaim
	err := k.waitFor(ctx, "PVC "+name+" Bound", func(ctx context.Context) (bool, string, error) {
		if err := k.c.Get(ctx, client.ObjectKey{Namespace: k.ns, Name: name}, &pvc); err != nil {
			return false, "", fmt.Errorf("get PVC %s: %w", name, err)
		}
		return pvc.Status.Phase == corev1.ClaimBound, fmt.Sprintf("phase %s, selected node %q", pvc.Status.Phase,
			pvc.Annotations["volume.kubernetes.io/selected-node"]), nil
	})
	return &pvc, err
}

func (k *kube) pv(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	var pv corev1.PersistentVolume
	if err := k.c.Get(ctx, client.ObjectKey{Name: name}, &pv); err != nil {
		return nil, fmt.Errorf("get PV %s: %w", name, err)
	}
	return &pv, nil
}

// logicalVolume finds the LogicalVolume whose LV is volumeID.
func (k *kube) logicalVolume(ctx context.Context, volumeID string) (*topolvmv1.LogicalVolume, error) {
	lvs, err := k.logicalVolumes(ctx, volumeID)
	if err != nil {
		return nil, err
	}
	if len(lvs) == 0 {
		return nil, fmt.Errorf("no LogicalVolume has volumeID %s", volumeID)
	}
	return &lvs[0], nil
}

// logicalVolumes lists the LogicalVolumes whose LV is one of volumeIDs.
func (k *kube) logicalVolumes(ctx context.Context, volumeIDs ...string) ([]topolvmv1.LogicalVolume, error) {
	var list topolvmv1.LogicalVolumeList
	if err := k.c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list LogicalVolumes: %w", err)
	}
	var found []topolvmv1.LogicalVolume
	for _, lv := range list.Items {
		for _, id := range volumeIDs {
			if lv.Status.VolumeID == id {
				found = append(found, lv)
			}
		}
	}
	return found, nil
}

// waitOutput waits until the pod's output contains want and returns it.
func (k *kube) waitOutput(ctx context.Context, pod string, want string) (string, error) {
	var tail string
	err := k.waitFor(
		ctx,
		fmt.Sprintf("pod %s to print %q", pod, want),
		func(ctx context.Context) (bool, string, error) {
			var p corev1.Pod
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: k.ns, Name: pod}, &p); err != nil {
				return false, "", fmt.Errorf("get pod %s: %w", pod, err)
			}
			tail = k.output(ctx, &p)
			return strings.Contains(tail, want), describePod(&p) + " output " + fmt.Sprintf("%q", tail), nil
		},
	)
	return tail, err
}

// NewSnapshot is VolumeSnapshot name in namespace ns of the claim, in VolumeSnapshotClass class
// (the demo's and the e2e suite's).
func NewSnapshot(ns, name, class, claim string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(snapshotGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = map[string]any{
		"volumeSnapshotClassName": class,
		"source":                  map[string]any{"persistentVolumeClaimName": claim},
	}
	return u
}

// readySnapshot waits until the snapshot is readyToUse and returns its LV name (the content's
// snapshotHandle) and restore size.
func (k *kube) readySnapshot(ctx context.Context, name string) (handle, size string, err error) {
	snap := &unstructured.Unstructured{}
	snap.SetGroupVersionKind(snapshotGVK)
	err = k.waitFor(ctx, "VolumeSnapshot "+name+" readyToUse", func(ctx context.Context) (bool, string, error) {
		if err := k.c.Get(ctx, client.ObjectKey{Namespace: k.ns, Name: name}, snap); err != nil {
			return false, "", fmt.Errorf("get VolumeSnapshot %s: %w", name, err)
		}
		ready, _, _ := unstructured.NestedBool(snap.Object, "status", "readyToUse")
		status, _, _ := unstructured.NestedMap(snap.Object, "status")
		return ready, fmt.Sprintf("status %v", status), nil
	})
	if err != nil {
		return "", "", err
	}
	size, _, _ = unstructured.NestedString(snap.Object, "status", "restoreSize")
	contentName, _, _ := unstructured.NestedString(snap.Object, "status", "boundVolumeSnapshotContentName")
	content := &unstructured.Unstructured{}
	content.SetGroupVersionKind(snapshotContentGVK)
	if err := k.c.Get(ctx, client.ObjectKey{Name: contentName}, content); err != nil {
		return "", "", fmt.Errorf("get VolumeSnapshotContent %s: %w", contentName, err)
	}
	handle, _, _ = unstructured.NestedString(content.Object, "status", "snapshotHandle")
	if handle == "" {
		return "", "", fmt.Errorf("VolumeSnapshotContent %s has no snapshotHandle", contentName)
	}
	return handle, size, nil
}

// deleteDemoObjects deletes the demo's pods, claims and snapshot and waits until they are gone.
func (d *demo) deleteDemoObjects(ctx context.Context) error {
	if err := d.k.deletePods(ctx, podName, clonePodName); err != nil {
		return err
	}
	snap := NewSnapshot(d.k.ns, snapshotName, storageClass, claimName)
	objs := []client.Object{
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: cloneName, Namespace: d.k.ns}},
		snap,
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claimName, Namespace: d.k.ns}},
	}
	for _, o := range objs {
		if err := d.k.c.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete %T %s: %w", o, o.GetName(), err)
		}
	}
	for _, o := range objs {
		if err := d.k.waitGone(ctx, fmt.Sprintf("%s %s", kindOf(o), o.GetName()), o, o.GetName()); err != nil {
			return err
		}
	}
	return nil
}

func kindOf(o client.Object) string {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u.GetKind()
	}
	return "PVC"
}
