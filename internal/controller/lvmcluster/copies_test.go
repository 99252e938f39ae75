package lvmcluster_test

import (
	"context"
	"fmt"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
)

// copyObject copies the object named from into a new object named to, the way a user or the
// storage e2e suite copies a class (kubectl get -o yaml, new name, apply): labels, annotations
// (our UID stamp among them) and everything else come along; the server gives the copy a UID.
func copyObject(t *testing.T, obj client.Object, from, to string) {
	t.Helper()
	ctx := context.Background()
	eventually(t, from+" stamped with its own UID", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKey{Name: from}, obj); err != nil {
			return err
		}
		if obj.GetAnnotations()[lvmcluster.AnnotationOperandUID] != string(obj.GetUID()) {
			return fmt.Errorf("annotations %v, UID %s", obj.GetAnnotations(), obj.GetUID())
		}
		return nil
	})
	obj.SetName(to)
	obj.SetResourceVersion("")
	obj.SetManagedFields(nil)
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatalf("create copy %s of %s: %v", to, from, err)
	}
}

func copyStorageClass(t *testing.T, from, to string) {
	t.Helper()
	copyObject(t, &storagev1.StorageClass{}, from, to)
}

func copySnapshotClass(t *testing.T, from, to string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(lvmcluster.SnapshotClassGVK)
	copyObject(t, u, from, to)
}

// expectCopies fails unless the user's copies of our classes still exist.
func expectCopies(ctx context.Context, storageClasses, snapshotClasses []string) error {
	for _, n := range storageClasses {
		if err := k8s.Get(ctx, client.ObjectKey{Name: n}, &storagev1.StorageClass{}); err != nil {
			return fmt.Errorf("the copied StorageClass %s: %w", n, err)
		}
	}
	for _, n := range snapshotClasses {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(lvmcluster.SnapshotClassGVK)
		if err := k8s.Get(ctx, client.ObjectKey{Name: n}, u); err != nil {
			return fmt.Errorf("the copied VolumeSnapshotClass %s: %w", n, err)
		}
	}
	return nil
}

// deleteCopies removes the test's copies once the test is done with them.
func deleteCopies(t *testing.T, storageClasses, snapshotClasses []string) {
	t.Helper()
	ctx := context.Background()
	for _, n := range storageClasses {
		sc := &storagev1.StorageClass{}
		sc.Name = n
		if err := k8s.Delete(ctx, sc); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	for _, n := range snapshotClasses {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(lvmcluster.SnapshotClassGVK)
		u.SetName(n)
		if err := k8s.Delete(ctx, u); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
}
