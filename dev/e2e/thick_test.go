//go:build e2e

package e2e

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

// testThickSnapshots: a VolumeSnapshot (class lvms-thick) of a thick claim is a copy-on-write
// snapshot of the source's size; a claim restored from it holds the data of the snapshot's time and
// survives deleting both the snapshot and the source (a full copy); a claim cloned from a thick
// claim is a full copy too (a plain LV, read from a snapshot of the source that is gone after), and
// survives deleting the source.
func testThickSnapshots(t *testing.T) {
	fullSetOnly(t, "thick snapshots restored as full copies (8 to 9 min there)")
	e := newEnv(t)
	e.claim("src", thickClass, "64Mi", false, "")
	e.pod("writer", "src", false, "", writeScript)
	writer, _ := e.finished("writer")
	node := writer.Spec.NodeName
	snap := e.snapshot("snap", thickClass, "src")
	restoreSize, _, _ := unstructured.NestedString(snap.Object, "status", "restoreSize")
	if q, err := resource.ParseQuantity(restoreSize); err != nil || q.Cmp(resource.MustParse("64Mi")) != 0 {
		t.Errorf("restoreSize %q, want the source's 64Mi (not the copy-on-write store's size)", restoreSize)
	}
	_, srcLV := e.volumeOf("src")
	snapLV := e.snapshotLV(srcLV.Status.VolumeID)
	if attr := lvAttr(e.lvs(node), snapLV.Status.VolumeID); !strings.HasPrefix(attr, "s") {
		t.Fatalf("snapshot LV %s has attributes %q, want a copy-on-write snapshot (s...)", snapLV.Status.VolumeID, attr)
	}
	t.Logf("VolumeSnapshot snap: restoreSize %s, LV %s (%s) on %s", restoreSize, snapLV.Status.VolumeID,
		snapLV.Status.CurrentSize, node)

	// A clone is a full copy: a plain LV with the source's data, and no snapshot left of the copy.
	clone := newClaim("clone", thickClass, "64Mi")
	clone.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
	e.create(clone)
	e.pod("clone-user", "clone", false, node, "cat /data/f")
	if _, out := e.finished("clone-user"); strings.TrimSpace(out) != "e2e-data" {
		t.Fatalf("cloned claim holds %q, want e2e-data", out)
	}
	_, cloneLV := e.volumeOf("clone")
	if lvs := e.lvs(node); !strings.HasPrefix(lvAttr(lvs, cloneLV.Status.VolumeID), "-") ||
		strings.Contains(lvs, "-image") || strings.Contains(lvs, "-restoring") {
		t.Fatalf("clone LV %s on %s: want a plain LV and no image or -restoring LV left:\n%s",
			cloneLV.Status.VolumeID, node, lvs)
	}

	// One pod overwrites the source and reads the restore: it holds the snapshot's data.
	e.claim("restored", thickClass, "64Mi", false, "snap")
	after := newPod("after", `set -e; echo changed > /data/f; sync; echo "restored=$(cat /restored/f)"`)
	useClaim(after, "src", mountPath, "")
	useClaim(after, "restored", "/restored", "")
	e.create(after)
	if _, out := e.finished("after"); !strings.Contains(out, "restored=e2e-data") {
		t.Fatalf("restored claim holds %q, want restored=e2e-data", out)
	}
	_, restoredLV := e.volumeOf("restored")
	if restoredLV.Spec.NodeName != node {
		t.Fatalf("restore on %s, source on %s", restoredLV.Spec.NodeName, node)
	}

	// Delete the snapshot and the source: the restore is a copy and lives on.
	e.deleteAll(snap, writer, after, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "src"}})
	e.waitGone(snapLV)
	e.waitGone(srcLV)
	lvs := e.lvs(node)
	for _, id := range []string{snapLV.Status.VolumeID, srcLV.Status.VolumeID} {
		if lvAttr(lvs, id) != "" {
			t.Fatalf("LV %s is still on node %s:\n%s", id, node, lvs)
		}
	}
	if attr := lvAttr(lvs, restoredLV.Status.VolumeID); !strings.HasPrefix(attr, "-") {
		t.Fatalf("restored LV %s has attributes %q, want a plain LV", restoredLV.Status.VolumeID, attr)
	}
	if attr := lvAttr(lvs, cloneLV.Status.VolumeID); !strings.HasPrefix(attr, "-") {
		t.Fatalf("cloned LV %s has attributes %q after its source was deleted, want a plain LV",
			cloneLV.Status.VolumeID, attr)
	}
	t.Logf("after deleting the snapshot and the source, lvs on %s:\n%s", node, lvs)
	e.pod("reader", "restored", false, "", "cat /data/f")
	if _, out := e.finished("reader"); strings.TrimSpace(out) != "e2e-data" {
		t.Fatalf("restored claim holds %q after its snapshot and source were deleted, want e2e-data", out)
	}
}

// snapshotLV is the LogicalVolume of the read-only snapshot of the volume sourceID.
func (e *env) snapshotLV(sourceID string) *topolvmv1.LogicalVolume {
	e.t.Helper()
	var lvs topolvmv1.LogicalVolumeList
	if err := e.c.List(e.ctx(), &lvs); err != nil {
		e.t.Fatalf("list LogicalVolumes: %v", err)
	}
	i := slices.IndexFunc(lvs.Items, func(lv topolvmv1.LogicalVolume) bool {
		return lv.Spec.Source == sourceID && lv.Spec.AccessType == topolvmv1.AccessTypeReadOnly
	})
	if i < 0 {
		e.t.Fatalf("no snapshot LogicalVolume of %s", sourceID)
	}
	return &lvs.Items[i]
}

// deleteAll deletes the test namespace's objs.
func (e *env) deleteAll(objs ...client.Object) {
	e.t.Helper()
	for _, obj := range objs {
		obj.SetNamespace(e.ns)
		if err := e.c.Delete(e.ctx(), obj); client.IgnoreNotFound(err) != nil {
			e.t.Fatalf("delete %T %s: %v", obj, obj.GetName(), err)
		}
	}
}
