package lvmcluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
)

// testDeletion deletes the LVMCluster of TestLVMClusterLifecycle: it waits for the claims on our
// classes and on copies of them, then tears down what the operator made and nothing else.
func testDeletion(t *testing.T, c *lvmv1alpha1.LVMCluster) {
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("lvms-vg1"),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			},
		},
	}
	if err := k8s.Create(ctx, pvc); err != nil {
		t.Fatalf("create PVC: %v", err)
	}
	// A claim on "fast", a user's copy of lvms-vg1: its volume lives in vg1 too.
	onCopy := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "on-copy", Namespace: "default"},
		Spec:       *pvc.Spec.DeepCopy(),
	}
	onCopy.Spec.StorageClassName = ptr.To("fast")
	if err := k8s.Create(ctx, onCopy); err != nil {
		t.Fatalf("create PVC: %v", err)
	}
	// Play a node agent that has not torn its volume group down yet: its claim is its entry in its
	// node status, and the operator's finalizer holds the LVMVolumeGroup while it is there.
	vg := &lvmv1alpha1.LVMVolumeGroup{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "vg1"}}
	eventually(t, "the operator's finalizer on the LVMVolumeGroup", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(vg), vg); err != nil {
			return err
		}
		if !slices.Contains(vg.Finalizers, lvmv1alpha1.VolumeGroupCleanupFinalizer) {
			return fmt.Errorf("finalizers %v", vg.Finalizers)
		}
		return nil
	})
	claim := &lvmv1alpha1.LVMVolumeGroupNodeStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "node-holding-vg1"},
		Spec: lvmv1alpha1.LVMVolumeGroupNodeStatusSpec{LiveNodeStatus: []lvmv1alpha1.VGStatus{
			{Name: "vg1", Status: lvmv1alpha1.VGStatusReady},
		}},
	}
	if err := k8s.Create(ctx, claim); err != nil {
		t.Fatalf("create the node's claim: %v", err)
	}
	if err := k8s.Delete(ctx, c); err != nil {
		t.Fatalf("delete LVMCluster: %v", err)
	}
	expectBlockedBy(t, c, "default/data", "default/on-copy")
	// The operands are untouched while the claim exists.
	if err := k8s.Get(ctx, client.ObjectKey{Name: "lvms-vg1"}, &storagev1.StorageClass{}); err != nil {
		t.Fatalf("StorageClass removed while a PVC uses it: %v", err)
	}
	deleteClaim(t, pvc)
	// The claim on our own class is gone; the one on the copy still holds the deletion.
	expectBlockedBy(t, c, "default/on-copy")
	if err := k8s.Get(ctx, client.ObjectKey{Name: "lvms-vg1"}, &storagev1.StorageClass{}); err != nil {
		t.Fatalf("StorageClass removed while a PVC on its copy uses vg1: %v", err)
	}
	deleteClaim(t, onCopy)
	// The classes go first, so nothing new is provisioned while the volume groups are torn down.
	eventually(t, "StorageClass gone while the volume group is still torn down", func(ctx context.Context) error {
		if err := k8s.Get(
			ctx,
			client.ObjectKey{Name: "lvms-vg1"},
			&storagev1.StorageClass{},
		); !apierrors.IsNotFound(
			err,
		) {
			return fmt.Errorf("StorageClass: %w", err)
		}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(vg), vg); err != nil {
			return fmt.Errorf("the LVMVolumeGroup went before the StorageClass: %w", err)
		}
		return nil
	})
	// Being deleted, the LVMVolumeGroup stays while the node claims it.
	eventually(t, "the LVMVolumeGroup being deleted", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(vg), vg); err != nil {
			return err
		}
		if vg.DeletionTimestamp.IsZero() {
			return errors.New("not deleted yet")
		}
		return nil
	})
	consistently(t, "the claimed LVMVolumeGroup stays", func(ctx context.Context) error {
		return k8s.Get(ctx, client.ObjectKeyFromObject(vg), &lvmv1alpha1.LVMVolumeGroup{})
	})
	// The nodes tore the volume group down (this one and those the status tests played): their
	// entries go, and with them the LVMVolumeGroup.
	if err := k8s.DeleteAllOf(ctx, &lvmv1alpha1.LVMVolumeGroupNodeStatus{},
		client.InNamespace(operatorNamespace)); err != nil {
		t.Fatalf("drop the nodes' claims: %v", err)
	}
	eventually(t, "LVMCluster and operands gone", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &lvmv1alpha1.LVMCluster{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("LVMCluster: %w", err)
		}
		checks := []client.Object{
			&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "lvms-vg1"}},
			&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "topolvm.io"}},
			&appsv1.DaemonSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: lvmcluster.NodeDaemonSetName},
			},
			&lvmv1alpha1.LVMVolumeGroup{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "vg1"}},
			&admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: lvmcluster.NodeAgentPolicyName}},
			&admissionv1.ValidatingAdmissionPolicyBinding{
				ObjectMeta: metav1.ObjectMeta{Name: lvmcluster.NodeAgentPolicyName},
			},
		}
		for _, o := range checks {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T %s still there: %w", o, o.GetName(), err)
			}
		}
		return nil
	})
	// The teardown removed what the operator made and nothing of the user's.
	if err := expectCopies(ctx, copiedStorageClasses, copiedSnapshotClasses); err != nil {
		t.Fatal(err)
	}
	deleteCopies(t, copiedStorageClasses, copiedSnapshotClasses)
}

// deleteClaim deletes a PVC and drops its finalizers: no kube-controller-manager runs here to drop
// the pvc-protection finalizer.
func deleteClaim(t *testing.T, pvc *corev1.PersistentVolumeClaim) {
	t.Helper()
	if err := k8s.Delete(context.Background(), pvc); err != nil {
		t.Fatal(err)
	}
	eventually(t, "drop PVC finalizers", func(ctx context.Context) error {
		var cur corev1.PersistentVolumeClaim
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pvc), &cur); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		cur.Finalizers = nil
		return k8s.Update(ctx, &cur)
	})
}

// expectBlockedBy waits until the deleted LVMCluster c says its deletion waits for exactly the claims
// (namespace/name) given of data and on-copy, the two claims testDeletion makes.
func expectBlockedBy(t *testing.T, c *lvmv1alpha1.LVMCluster, claims ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("deletion blocked by %v", claims), func(ctx context.Context) error {
		var got lvmv1alpha1.LVMCluster
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &got); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, lvmv1alpha1.ConditionDeletionBlocked)
		if cond == nil || cond.Reason != lvmcluster.ReasonPVCsExist {
			return fmt.Errorf("condition %+v", cond)
		}
		for _, claim := range []string{"default/data", "default/on-copy"} {
			if strings.Contains(cond.Message, claim) != slices.Contains(claims, claim) {
				return fmt.Errorf("condition %+v, want it to name exactly %v", cond, claims)
			}
		}
		return nil
	})
}
