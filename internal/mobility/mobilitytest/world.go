// Package mobilitytest is the fake cluster of the mobility tests: a claim bound to a volume on node-a,
// and a simulator that plays the node agents, the operator and the PV controller during a move.
package mobilitytest

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// MoveToAnnotation is the annotation a move records its target node in (mobility's moveToAnnotation;
// this package cannot import mobility, whose tests use it).
const MoveToAnnotation = "lvms.topolvm.io/move-to"

// World is the move world: claim prod/data-db-0 (labels, an annotation, an owner) bound to PV pv-old, LV
// "old-lv" of LogicalVolume pv-old on node-a; node-b has room in class thin; pod db-0 uses the claim.
func World() []client.Object {
	size := resource.MustParse("1Gi")
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "sts-uid"}
	return []client.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a",
			Annotations: map[string]string{driver.CapacityAnnotation("thin"): "10737418240"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b",
			Annotations: map[string]string{driver.CapacityAnnotation("thin"): "10737418240"}}},
		&corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data-db-0", Namespace: "prod", UID: "claim-uid",
				Labels: map[string]string{"app": "db"}, OwnerReferences: []metav1.OwnerReference{owner},
				Annotations: map[string]string{"team": "storage", "pv.kubernetes.io/bind-completed": "yes",
					"volume.kubernetes.io/selected-node": "node-a"}},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: new("lvms-thin"),
				VolumeName:       "pv-old",
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: size},
				},
			},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
		},
		&corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-old", UID: "pv-uid",
				Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": driver.Name}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				StorageClassName:              "lvms-thin",
				ClaimRef: &corev1.ObjectReference{
					Namespace: "prod",
					Name:      "data-db-0",
					UID:       "claim-uid",
				},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: driver.Name, VolumeHandle: "old-lv", FSType: "xfs"}},
			},
		},
		&topolvmv1.LogicalVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-old"},
			Spec: topolvmv1.LogicalVolumeSpec{
				Name:        "pv-old",
				NodeName:    "node-a",
				DeviceClass: "thin",
				Size:        size,
			},
			Status: topolvmv1.LogicalVolumeStatus{VolumeID: "old-lv", CurrentSize: &size},
		},
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "prod"},
			Spec: corev1.PodSpec{NodeName: "node-a", Volumes: []corev1.Volume{{Name: "data",
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
					ClaimName: "data-db-0"}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		},
	}
}

// Client is a fake client holding objs (LogicalVolume and claim status as subresources).
func Client(t testing.TB, objs ...client.Object) client.WithWatch {
	t.Helper()
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&topolvmv1.LogicalVolume{}, &corev1.PersistentVolumeClaim{}).Build()
}

// Simulate plays the node agents, the operator and the PV controller until ctx ends: it completes the
// copy of a new LogicalVolume, binds a claim created with a volume name, and deletes a Released PV whose
// reclaim policy is Delete.
func Simulate(ctx context.Context, c client.Client, wg *sync.WaitGroup) {
	wg.Go(func() {
		for ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
			var lvs topolvmv1.LogicalVolumeList
			_ = c.List(ctx, &lvs)
			for i := range lvs.Items {
				lv := &lvs.Items[i]
				if lv.Spec.SourceNode != "" && lv.Status.VolumeID == "" {
					lv.Status.VolumeID, lv.Status.CurrentSize = "new-"+lv.Name, &lv.Spec.Size
					lv.Status.Transfer = &topolvmv1.TransferStatus{Phase: topolvmv1.TransferComplete, Attempt: 1,
						VerifiedBytes: lv.Spec.Size.Value()}
					_ = c.Status().Update(ctx, lv)
				}
			}
			var claims corev1.PersistentVolumeClaimList
			_ = c.List(ctx, &claims)
			for i := range claims.Items {
				if claim := &claims.Items[i]; claim.Spec.VolumeName != "" && claim.Status.Phase != corev1.ClaimBound {
					claim.Status.Phase = corev1.ClaimBound
					_ = c.Status().Update(ctx, claim)
				}
			}
			var pvs corev1.PersistentVolumeList
			_ = c.List(ctx, &pvs)
			for i := range pvs.Items {
				if pv := &pvs.Items[i]; pv.Annotations[MoveToAnnotation] != "" &&
					pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
					_ = c.Delete(ctx, pv)
				}
			}
		}
	})
}

// Scheme holds the Kubernetes types and LogicalVolume.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, topolvmv1.AddToScheme(s)
}
