//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// copiedClass is a user's copy of lvms-thin. Its name carries our prefix, so its creation wakes
// the operator's StorageClass watch at once: the reconcile that used to delete such a copy
// within seconds (it carries our labels) runs while the test provisions on it.
const copiedClass = "lvms-thin-e2e-copy"

// testCopiedStorageClass copies lvms-thin under another name as users and Kubernetes' storage e2e
// suite do (get, new name, create: our labels and annotations come along), provisions a claim on
// the copy and writes to it, and proves the copy is still there and the claim Bound afterwards.
func testCopiedStorageClass(t *testing.T) {
	fullSetOnly(t, "a StorageClass copied from the operator's with other parameters")
	e := newEnv(t)
	var sc storagev1.StorageClass
	if err := e.c.Get(e.ctx(), client.ObjectKey{Name: thinClass}, &sc); err != nil {
		t.Fatalf("get %s: %v", thinClass, err)
	}
	sc.Name, sc.ResourceVersion, sc.ManagedFields = copiedClass, "", nil
	// A copy left by an interrupted run is the same copy again.
	_ = e.c.Delete(e.ctx(), &storagev1.StorageClass{ObjectMeta: sc.ObjectMeta})
	e.waitGone(&storagev1.StorageClass{ObjectMeta: sc.ObjectMeta})
	if err := e.c.Create(e.ctx(), &sc); err != nil {
		t.Fatalf("create the copy %s: %v", copiedClass, err)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), &sc) })

	e.claim("on-copy", copiedClass, "1Gi", false, "")
	e.pod("w-copy", "on-copy", false, "", writeScript)
	if _, out := e.finished("w-copy"); !strings.Contains(out, "read=e2e-data") {
		t.Fatalf("the volume of the copied class holds %q, want e2e-data", out)
	}
	var got storagev1.StorageClass
	if err := e.c.Get(e.ctx(), client.ObjectKey{Name: copiedClass}, &got); err != nil {
		t.Fatalf("the copied StorageClass after provisioning: %v", err)
	}
	if got.UID != sc.UID {
		t.Fatalf("the copied StorageClass was replaced (UID %s, created %s)", got.UID, sc.UID)
	}
	if _, lv := e.volumeOf("on-copy"); lv.Spec.DeviceClass != "thin" {
		t.Fatalf("the claim on the copy is on device class %q, want thin", lv.Spec.DeviceClass)
	}
}
