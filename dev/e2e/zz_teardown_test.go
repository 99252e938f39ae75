//go:build e2e

package e2e

// This file is named to sort last: go test runs a package's tests in the order of its files, and
// the test here deletes the LVMCluster the others use (newEnv would create it again, slowly).

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// vgsScript lists the volume groups and the physical volumes of the node.
const vgsScript = `echo "vgs: $(vgs --noheadings -o vg_name | tr -s ' \n' ' ')"; echo "pvs: $(pvs --noheadings -o pv_name | tr -s ' \n' ' ')"`

// TestLVMClusterDeletion deletes the LVMCluster while a claim of it is in use: the deletion waits
// (DeletionBlocked) and the volume groups stay; once the claim is gone, the LVMCluster goes and
// every node's volume groups, thin pool and PV labels go with it, as do the StorageClasses.
func TestLVMClusterDeletion(t *testing.T) {
	e := newEnv(t)
	e.claim("held", thinClass, "1Gi", false, "")
	e.pod("holder", "held", false, "", writeScript)
	e.finished("holder")
	_, lv := e.volumeOf("held")

	cluster := &lvmv1alpha1.LVMCluster{ObjectMeta: metav1.ObjectMeta{Name: "e2e", Namespace: operatorNS}}
	if err := e.c.Delete(e.ctx(), cluster); err != nil {
		t.Fatalf("delete LVMCluster: %v", err)
	}
	e.waitFor("LVMCluster condition DeletionBlocked", func(ctx context.Context) (bool, string, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(cluster), cluster); err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(cluster.Status.Conditions, lvmv1alpha1.ConditionDeletionBlocked)
		if c == nil {
			return false, "no DeletionBlocked condition", nil
		}
		return c.Status == metav1.ConditionTrue && strings.Contains(c.Message, e.ns+"/held"), c.Message, nil
	})
	for _, node := range e.nodes() {
		if out := e.onAgent(node, vgsScript); !strings.Contains(out, " thick ") || !strings.Contains(out, " thin ") {
			t.Fatalf("volume groups of %s while the deletion is blocked: %s", node, out)
		}
	}
	if err := e.c.Get(e.ctx(), client.ObjectKeyFromObject(lv), lv); err != nil {
		t.Fatalf("LogicalVolume %s while the deletion is blocked: %v", lv.Name, err)
	}

	if err := e.c.DeleteAllOf(e.ctx(), &corev1.Pod{}, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(
		e.ctx(),
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: e.ns}},
	); err != nil {
		t.Fatal(err)
	}
	e.waitFor("LVMCluster e2e gone", func(ctx context.Context) (bool, string, error) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(cluster), cluster)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		c := meta.FindStatusCondition(cluster.Status.Conditions, lvmv1alpha1.ConditionDeletionBlocked)
		return false, fmt.Sprintf("DeletionBlocked %+v", c), err
	})
	for _, node := range e.nodes() {
		out := e.onNode(node, "vgs-after-"+node, vgsScript)
		if strings.Contains(out, " thick ") || strings.Contains(out, " thin ") || strings.Contains(out, "/dev/ubd") {
			t.Fatalf("%s after the LVMCluster was deleted still has: %s", node, out)
		}
		t.Logf("%s after the deletion: %s", node, strings.Join(strings.Fields(out), " "))
	}
	for _, obj := range []client.Object{
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: thickClass}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: thinClass}},
		&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "topolvm.io"}},
	} {
		if err := e.c.Get(e.ctx(), client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			t.Fatalf("%T %s after the LVMCluster was deleted: %v", obj, obj.GetName(), orPresent(err))
		}
	}
	var statuses lvmv1alpha1.LVMVolumeGroupNodeStatusList
	if err := e.c.List(e.ctx(), &statuses, client.InNamespace(operatorNS)); err != nil {
		t.Fatal(err)
	}
	for _, st := range statuses.Items {
		if len(st.Spec.LiveNodeStatus) > 0 {
			t.Fatalf("LVMVolumeGroupNodeStatus %s still reports volume groups: %+v", st.Name, st.Spec.LiveNodeStatus)
		}
	}
}

func orPresent(err error) error {
	if err == nil {
		return fmt.Errorf("still present")
	}
	return err
}
