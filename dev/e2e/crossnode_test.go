//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// The writers of testCrossNodeRestore: scattered random data, then the sha256 of the whole device
// (Block) or of the files (Filesystem), printed as sum=<hex>.
const (
	blockWrite = `set -e
size=$(blockdev --getsize64 /dev/xvda); last=$((size / 1048576 - 2))
for o in 0 5 $last; do dd if=/dev/urandom of=/dev/xvda bs=1048576 seek=$o count=2 conv=notrunc,fsync 2>/dev/null; done
echo "sum=$(sha256sum </dev/xvda | cut -c1-64)"`
	blockSum  = `echo "sum=$(sha256sum </dev/xvda | cut -c1-64)"`
	fileWrite = `set -e
dd if=/dev/urandom of=/data/big bs=1048576 count=4 2>/dev/null; echo e2e-data > /data/f; mkdir -p /data/d
dd if=/dev/urandom of=/data/d/small bs=4096 count=3 2>/dev/null; sync
echo "sum=$(cat /data/big /data/f /data/d/small | sha256sum | cut -c1-64)"`
	fileSum = `echo "sum=$(cat /data/big /data/f /data/d/small | sha256sum | cut -c1-64)"`
)

var sumLine = regexp.MustCompile(`sum=([0-9a-f]{64})`)

// TestCrossNodeRestore restores snapshots, and clones claims, on the other node than their source's,
// where the restoring pod must run, with the LVMCluster's spec.transfer.crossNode Enabled: the operator places the restore on the node
// the scheduler selected and the node agents copy the snapshot's data there over the local
// cluster's network between the nodes (a few MB/s: the volumes are small). The data read on the other
// node is the snapshot's (sha256 of the whole device for Block, of the files for Filesystem), the
// thin copy moves only what is allocated, and the claim says what happened in its events. Then
// TestCrossNodeRestore/faults kills both agents mid-copy.
func TestCrossNodeRestore(t *testing.T) {
	fullSetOnly(t, mobilityCost)
	e := newEnv(t)
	e.crossNodeRestore(true)
	// Deferred, not a Cleanup: the test's context, which the calls use, is canceled before Cleanups.
	defer e.crossNodeRestore(false)
	e.mobileStorageClass()
	for _, c := range []struct {
		name, class, size  string
		thin, block, clone bool
		write, check       string
	}{
		{"thin-filesystem", mobileClass, mobileSize, true, false, false, fileWrite, fileSum},
		{"thin-block", thinClass, "256Mi", true, true, false, blockWrite, blockSum},
		{"thick-block", thickClass, "32Mi", false, true, false, blockWrite, blockSum},
		{"thin-block-clone", thinClass, "256Mi", true, true, true, blockWrite, blockSum},
		{"thick-block-clone", thickClass, "32Mi", false, true, true, blockWrite, blockSum},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := e.sub(t)
			n := func(s string) string { return c.name + "-" + s }
			e.claim(n("src"), c.class, c.size, c.block, "")
			e.pod(n("writer"), n("src"), c.block, "", c.write)
			writer, out := e.finished(n("writer"))
			want := sumOf(t, out)
			other := e.otherNode(writer.Spec.NodeName)
			if c.clone {
				e.cloneClaim(n("restored"), c.class, c.size, c.block, n("src"))
			} else {
				snapClass := thickClass // the VolumeSnapshotClass of the claim's device class
				if c.thin {
					snapClass = thinClass
				}
				e.snapshot(n("snap"), snapClass, n("src"))
				e.claim(n("restored"), c.class, c.size, c.block, n("snap"))
			}
			e.pod(n("reader"), n("restored"), c.block, other, c.check)
			reader, out := e.finished(n("reader"))
			if got := sumOf(t, out); got != want || reader.Spec.NodeName != other {
				t.Fatalf("restore read sum %s on %s; the snapshot's is %s, written on %s", got,
					reader.Spec.NodeName, want, writer.Spec.NodeName)
			}
			_, lv := e.volumeOf(n("restored"))
			tr := lv.Status.Transfer
			if lv.Spec.NodeName != other || lv.Spec.SourceNode != writer.Spec.NodeName || tr == nil ||
				tr.Phase != topolvmv1.TransferComplete {
				t.Fatalf("LogicalVolume %s: node %s, source node %s, transfer %+v", lv.Name, lv.Spec.NodeName,
					lv.Spec.SourceNode, tr)
			}
			t.Logf("%s: %d bytes copied from %s to %s in %d attempt(s), %s", c.name, tr.CopiedBytes,
				writer.Spec.NodeName, other, tr.Attempt, tr.CompletionTime.Sub(tr.StartTime.Time))
			if size := lv.Status.CurrentSize.Value(); c.thin == (tr.CopiedBytes >= size) {
				t.Errorf("%d bytes copied of a %d-byte %s volume: a thin copy moves only what is allocated, "+
					"a thick one every byte", tr.CopiedBytes, size, c.class)
			}
			e.waitEvent(n("restored"), "CopyComplete", writer.Spec.NodeName)
			e.snapshotLeftAlone(n("src"), writer.Spec.NodeName)
			if c.clone {
				if lv.Annotations["lvms.topolvm.io/copy-image"] != "true" {
					t.Fatalf("the clone %s does not copy through an image: annotations %v", lv.Name, lv.Annotations)
				}
				e.imageGone(lv)
				e.lvsMatchLogicalVolumes(writer.Spec.NodeName)
			}
		})
	}
	t.Run("capacity", func(t *testing.T) { testCrossNodeCapacity(e.sub(t)) })
	t.Run("faults", func(t *testing.T) { testCrossNodeRestoreFaults(e.sub(t)) })
}

// cloneClaim creates a claim cloned from the claim src.
func (e *env) cloneClaim(name, class, size string, block bool, src string) {
	e.t.Helper()
	pvc := newClaim(name, class, size)
	if block {
		pvc.Spec.VolumeMode = new(corev1.PersistentVolumeBlock)
	}
	pvc.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: src}
	e.create(pvc)
}

// imageGone waits until the image the operator made of a clone's source (a read-only snapshot on the
// source's node, a LogicalVolume the clone controls) is deleted, its copy being complete.
func (e *env) imageGone(clone *topolvmv1.LogicalVolume) {
	e.t.Helper()
	e.waitFor("the image of the clone's source deleted", func(ctx context.Context) (bool, string, error) {
		var lvs topolvmv1.LogicalVolumeList
		if err := e.c.List(ctx, &lvs); err != nil {
			return false, "", err
		}
		var images []string
		for _, lv := range lvs.Items {
			if ref := metav1.GetControllerOf(&lv); ref != nil && ref.UID == clone.UID {
				images = append(images, lv.Name)
			}
		}
		return len(images) == 0, fmt.Sprintf("images %v", images), nil
	})
}

// crossNodeRestore sets the LVMCluster's spec.transfer.crossNode (Enabled or Disabled), as a user
// does, and waits until the operator has seen that generation (the CSI controller reads the
// LVMCluster from the operator's cache).
func (e *env) crossNodeRestore(on bool) {
	e.t.Helper()
	policy := lvmv1alpha1.CrossNodeDisabled
	if on {
		policy = lvmv1alpha1.CrossNodeEnabled
	}
	c := &lvmv1alpha1.LVMCluster{}
	key := client.ObjectKeyFromObject(e2eLVMCluster())
	if err := e.c.Get(e.ctx(), key, c); err != nil {
		e.t.Fatal(err)
	}
	base := c.DeepCopy()
	c.Spec.Transfer = &lvmv1alpha1.TransferSpec{CrossNode: policy}
	if err := e.c.Patch(e.ctx(), c, client.MergeFrom(base)); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor(fmt.Sprintf("the operator saw spec.transfer.crossNode %s", policy),
		func(ctx context.Context) (bool, string, error) {
			if err := e.c.Get(ctx, key, c); err != nil {
				return false, "", err
			}
			return c.Status.ObservedGeneration >= c.Generation,
				fmt.Sprintf("generation %d, observed %d", c.Generation, c.Status.ObservedGeneration), nil
		})
}

// sumOf is the sha256 a pod printed as sum=<hex>.
func sumOf(t *testing.T, out string) string {
	t.Helper()
	m := sumLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no sum in the pod's output %q", out)
	}
	return m[1]
}

// otherNode is a node of the cluster that is not node.
func (e *env) otherNode(node string) string {
	e.t.Helper()
	for _, n := range e.nodes() {
		if n != node {
			return n
		}
	}
	e.t.Fatalf("the cluster has no node but %s", node)
	return ""
}

// snapshotLeftAlone checks that the source claim's LV is still on node (a copy never moves or
// removes its source).
func (e *env) snapshotLeftAlone(claim, node string) {
	e.t.Helper()
	pv, _ := e.volumeOf(claim)
	if lvAttr(e.lvs(node), pv.Spec.CSI.VolumeHandle) == "" {
		e.t.Fatalf("the source LV %s is gone from node %s", pv.Spec.CSI.VolumeHandle, node)
	}
}

// killAgent is the script of a host pod that SIGKILLs the node's agent (the kubelet restarts it).
const killAgent = `if pkill -9 -f '[l]vms node .*--node-name'; then echo killed; else echo "no node agent to kill"; exit 1; fi`

// testCrossNodeRestoreFaults kills the source node's agent and then the target node's in the middle
// of a copy: each time the copy resumes from its last verified byte with a new token and completes;
// the restore holds the snapshot's data, the source's data never changes, and no LV is left on
// either node that no LogicalVolume records.
func testCrossNodeRestoreFaults(e *env) {
	t := e.t
	e.claim("f-src", thickClass, "96Mi", true, "")
	e.pod("f-writer", "f-src", true, "", blockWrite)
	writer, out := e.finished("f-writer")
	want, source := sumOf(t, out), writer.Spec.NodeName
	e.snapshot("f-snap", thickClass, "f-src")
	target := e.otherNode(source)
	e.claim("f-restored", thickClass, "96Mi", true, "f-snap")
	e.pod("f-reader", "f-restored", true, target, blockSum)

	lv := e.copyOf("f-restored")
	verified := e.copyingPast(lv, 1, 0)
	e.create(hostPod("f-kill-source", source, killAgent))
	e.finished("f-kill-source")
	t.Logf("killed the source agent on %s at byte %d of the copy", source, verified)
	verified = e.copyingPast(lv, 2, verified)
	e.create(hostPod("f-kill-target", target, killAgent))
	e.finished("f-kill-target")
	t.Logf("killed the target agent on %s at byte %d of the copy", target, verified)

	reader, out := e.finished("f-reader")
	if got := sumOf(t, out); got != want || reader.Spec.NodeName != target {
		t.Fatalf("restore read sum %s on %s, want %s on %s", got, reader.Spec.NodeName, want, target)
	}
	if err := e.c.Get(e.ctx(), client.ObjectKeyFromObject(lv), lv); err != nil {
		t.Fatal(err)
	}
	tr := lv.Status.Transfer
	if tr.Phase != topolvmv1.TransferComplete || tr.Attempt < 3 {
		t.Fatalf("transfer %+v: want complete after at least 3 attempts", tr)
	}
	t.Logf("copied %d bytes in %d attempts (last failure: %s)", tr.CopiedBytes, tr.Attempt, tr.Message)
	e.pod("f-check-src", "f-src", true, source, blockSum)
	if _, out := e.finished("f-check-src"); sumOf(t, out) != want {
		t.Fatalf("the source changed: %s, written %s", sumOf(t, out), want)
	}
	e.lvsMatchLogicalVolumes(source)
	e.lvsMatchLogicalVolumes(target)
}

// copyOf waits for the LogicalVolume of claim's restore (named after its PV, pvc-<claim UID>).
func (e *env) copyOf(claim string) *topolvmv1.LogicalVolume {
	e.t.Helper()
	var pvc corev1.PersistentVolumeClaim
	lv := &topolvmv1.LogicalVolume{}
	e.waitFor("the LogicalVolume of "+claim, func(ctx context.Context) (bool, string, error) {
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: claim}, &pvc); err != nil {
			return false, "", err
		}
		err := e.c.Get(ctx, client.ObjectKey{Name: "pvc-" + string(pvc.UID)}, lv)
		return err == nil, fmt.Sprint(err), client.IgnoreNotFound(err)
	})
	return lv
}

// copyingPast waits until lv's copy is at attempt at least attempt, copying, with its verified
// offset past from, and returns that offset.
func (e *env) copyingPast(lv *topolvmv1.LogicalVolume, attempt int32, from int64) int64 {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("the copy of %s past byte %d in attempt %d", lv.Name, from, attempt),
		func(ctx context.Context) (bool, string, error) {
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(lv), lv); err != nil {
				return false, "", err
			}
			tr := lv.Status.Transfer
			if tr == nil {
				return false, "no transfer yet", nil
			}
			if tr.Phase == topolvmv1.TransferComplete {
				return false, "", fmt.Errorf("the copy completed before the fault (%+v): make it longer", tr)
			}
			return tr.Attempt >= attempt && tr.Phase == topolvmv1.TransferCopying && tr.VerifiedBytes > from,
				fmt.Sprintf("%+v", tr), nil
		})
	return lv.Status.Transfer.VerifiedBytes
}
