//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/demo"
)

// writeScript writes a file into the mount, reads it back and prints the mount's filesystem type.
const writeScript = `set -e; echo e2e-data > /data/f; sync; echo "read=$(cat /data/f)"; awk '$2=="/data"{print "fstype="$3}' /proc/mounts`

func TestCapacityPlacement(t *testing.T) {
	fullSetOnly(t, "two 10 GiB thick claims placed on different nodes by CSIStorageCapacity alone, without the "+
		"extender (TestSchedulerExtender places the same claims with it; 264 s at 8d30bd3)")
	e := newEnv(t)
	// Each node has about 16 GiB in the thick VG: one 10 GiB claim fits per node.
	e.claim("big-1", thickClass, "10Gi", false, "")
	e.pod("use-1", "big-1", false, "", "echo ok")
	first, _ := e.finished("use-1")
	e.claim("big-2", thickClass, "10Gi", false, "")
	e.pod("use-2", "big-2", false, "", "echo ok")
	second, _ := e.finished("use-2")
	if first.Spec.NodeName == second.Spec.NodeName {
		t.Fatalf("both 10Gi claims landed on %s, which cannot hold 20Gi", first.Spec.NodeName)
	}
	_, lv := e.volumeOf("big-2")
	if lv.Spec.NodeName != second.Spec.NodeName {
		t.Fatalf("LV of big-2 on %s, its pod on %s", lv.Spec.NodeName, second.Spec.NodeName)
	}
	e.claim("big-3", thickClass, "10Gi", false, "")
	e.pod("use-3", "big-3", false, "", "echo ok")
	e.waitEvent("use-3", "FailedScheduling", "storage")
	var pvc corev1.PersistentVolumeClaim
	if err := e.c.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: "big-3"}, &pvc); err != nil {
		t.Fatal(err)
	}
	if pvc.Status.Phase != corev1.ClaimPending {
		t.Fatalf("big-3 is %s; it fits on no node and must stay Pending", pvc.Status.Phase)
	}
}

// testVolumeModes provisions a claim of every mode (thin and thick; xfs, ext4 and block) for one
// pod, which writes and reads each: the claims land on the pod's node and are written side by
// side, and each is an LV of the right kind there. (One pod, not one per claim: a pod costs the
// single-CPU node about half a minute.)
func testVolumeModes(t *testing.T) {
	e := newEnv(t)
	e.storageClass("e2e-thin-ext4", "thin", "ext4")
	e.storageClass("e2e-thick-xfs", "thick", "xfs")
	e.storageClass(btrfsClass, "thin", "btrfs")
	tests := []struct {
		name, class, fstype string
		thin, block         bool
	}{
		{"thin-xfs", thinClass, "xfs", true, false},
		{"thin-ext4", "e2e-thin-ext4", "ext4", true, false},
		{"thick-ext4", thickClass, "ext4", false, false},
		{"thick-xfs", "e2e-thick-xfs", "xfs", false, false},
		{"thin-btrfs", btrfsClass, "btrfs", true, false},
		{"thin-block", thinClass, "", true, true},
		{"thick-block", thickClass, "", false, true},
	}
	pod := newPod("writer", "")
	script := []string{"set -e"}
	for i, tt := range tests {
		e.claim(tt.name, tt.class, "1Gi", tt.block, "")
		if tt.block {
			dev := fmt.Sprintf("/dev/xvd%c", 'a'+i)
			useClaim(pod, tt.name, "", dev)
			script = append(
				script,
				fmt.Sprintf(
					`printf block-data | dd of=%[1]s conv=notrunc 2>/dev/null; echo "%[2]s read=$(head -c 10 %[1]s)"`,
					dev,
					tt.name,
				),
			)
			continue
		}
		dir := mountPath + "/" + tt.name
		useClaim(pod, tt.name, dir, "")
		script = append(
			script,
			fmt.Sprintf(
				`echo e2e-data > %[1]s/f; sync; echo "%[2]s read=$(cat %[1]s/f)"; awk '$2=="%[1]s"{print "%[2]s fstype="$3}' /proc/mounts`,
				dir,
				tt.name,
			),
		)
	}
	pod.Spec.Containers[0].Command = []string{"sh", "-c", strings.Join(script, "\n")}
	e.create(pod)
	done, out := e.finished("writer")
	lvs := e.lvs(done.Spec.NodeName)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e.sub(t)
			want := tt.name + " read=e2e-data"
			if tt.block {
				want = tt.name + " read=block-data"
			}
			if !strings.Contains(out, want) {
				t.Fatalf("pod output %q lacks %q", out, want)
			}
			if tt.fstype != "" && !strings.Contains(out, tt.name+" fstype="+tt.fstype) {
				t.Fatalf("pod output %q: the mount of %s is not %s", out, tt.name, tt.fstype)
			}
			pv, lv := e.volumeOf(tt.name)
			attr := lvAttr(lvs, pv.Spec.CSI.VolumeHandle)
			if attr == "" {
				t.Fatalf(
					"LV %s (LogicalVolume %s) not in lvs on %s:\n%s",
					pv.Spec.CSI.VolumeHandle,
					lv.Name,
					done.Spec.NodeName,
					lvs,
				)
			}
			if thin := attr[0] == 'V'; thin != tt.thin {
				t.Fatalf("LV %s has attr %s; thin volume wanted: %t", pv.Spec.CSI.VolumeHandle, attr, tt.thin)
			}
		})
	}
}

// lvAttr is the lv_attr of the LV in `lvs --noheadings -o lv_name,vg_name,lv_size,lv_attr` output.
func lvAttr(lvs, name string) string {
	for line := range strings.SplitSeq(lvs, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == name {
			return f[3]
		}
	}
	return ""
}

// sub is the env for a subtest: same namespace, the subtest's failures.
func (e *env) sub(t *testing.T) *env {
	s := *e
	s.t = t
	return &s
}

// storageClass creates a StorageClass of the driver with another filesystem, deleted at the end.
func (e *env) storageClass(name, deviceClass, fstype string) {
	e.t.Helper()
	sc := &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: name},
		Provisioner: "topolvm.io",
		Parameters: map[string]string{
			"topolvm.io/device-class":   deviceClass,
			"csi.storage.k8s.io/fstype": fstype,
		},
		VolumeBindingMode:    new(storagev1.VolumeBindingWaitForFirstConsumer),
		AllowVolumeExpansion: new(true),
	}
	if err := e.c.Create(e.ctx(), sc); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatalf("create StorageClass %s: %v", name, err)
	}
	e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), sc) })
}

// mobileStorageClass creates mobileClass for the test.
func (e *env) mobileStorageClass() {
	e.t.Helper()
	e.storageClass(mobileClass, "thin", "ext4")
}

// testExpansion grows a mounted claim of each class from 1Gi to 2Gi while one pod uses both: the
// PVC reports the new capacity and df in the running pod sees the filesystem grow.
func testExpansion(t *testing.T) {
	e := newEnv(t)
	e.storageClass(btrfsClass, "thin", "btrfs")
	classes := []string{thinClass, thickClass, btrfsClass}
	claimOf := func(class string) string { return "grow-" + strings.TrimPrefix(class, "lvms-") }
	pod := newPod(
		"grower",
		`prev=; while true; do cur=$(df -Pk `+mountPath+`/*-* | tail -n +2 | sed 's/^/df: /'); [ "$cur" != "$prev" ] && echo "$cur"; prev=$cur; sleep 1; done`,
	)
	for _, class := range classes {
		e.claim(claimOf(class), class, "1Gi", false, "")
		useClaim(pod, claimOf(class), mountPath+"/"+claimOf(class), "")
	}
	e.create(pod)
	e.running(pod.Name)
	two := resource.MustParse("2Gi")
	for _, class := range classes {
		var pvc corev1.PersistentVolumeClaim
		if err := e.c.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: claimOf(class)}, &pvc); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(pvc.DeepCopy())
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = two
		if err := e.c.Patch(e.ctx(), &pvc, patch); err != nil {
			t.Fatal(err)
		}
	}
	for _, class := range classes {
		t.Run(class, func(t *testing.T) {
			e := e.sub(t)
			name := claimOf(class)
			e.waitFor(
				"PVC capacity 2Gi and df in the pod above 1.5 GiB",
				func(ctx context.Context) (bool, string, error) {
					var pvc corev1.PersistentVolumeClaim
					if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &pvc); err != nil {
						return false, "", err
					}
					got := pvc.Status.Capacity[corev1.ResourceStorage]
					kib, _ := demo.LastDFSize(linesEndingWith(e.output(pod), " "+mountPath+"/"+name))
					return got.Cmp(two) >= 0 && kib > 3<<19, fmt.Sprintf("PVC %s, df %d KiB", got.String(), kib), nil
				},
			)
		})
	}
}

// linesEndingWith keeps the lines of out that end with suffix.
func linesEndingWith(out, suffix string) string {
	var keep []string
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasSuffix(strings.TrimSpace(line), suffix) {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

func testSnapshotRestore(t *testing.T) {
	e := newEnv(t)
	e.claim("src", thinClass, "1Gi", false, "")
	e.pod("writer", "src", false, "", writeScript)
	writer, _ := e.finished("writer")
	e.snapshot("snap", thinClass, "src")
	// Overwrite the source: the restore must show the data of the snapshot's time.
	e.pod("overwrite", "src", false, writer.Spec.NodeName, "echo changed > /data/f")
	e.finished("overwrite")
	e.claim("restored", thinClass, "1Gi", false, "snap")
	e.pod("reader", "restored", false, writer.Spec.NodeName, "cat /data/f")
	reader, out := e.finished("reader")
	if strings.TrimSpace(out) != "e2e-data" {
		t.Fatalf("restored volume holds %q, want e2e-data", out)
	}
	if reader.Spec.NodeName != writer.Spec.NodeName {
		t.Fatalf("restore on %s, source on %s", reader.Spec.NodeName, writer.Spec.NodeName)
	}
}

// snapshot creates VolumeSnapshot name of the claim in VolumeSnapshotClass class and waits until it
// is readyToUse; it returns the VolumeSnapshot.
func (e *env) snapshot(name, class, claim string) *unstructured.Unstructured {
	e.t.Helper()
	snap := demo.NewSnapshot(e.ns, name, class, claim)
	if err := e.c.Create(e.ctx(), snap); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("VolumeSnapshot "+name+" readyToUse", func(ctx context.Context) (bool, string, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(snap), snap); err != nil {
			return false, "", err
		}
		ready, _, _ := unstructured.NestedBool(snap.Object, "status", "readyToUse")
		st, _, _ := unstructured.NestedMap(snap.Object, "status")
		return ready, fmt.Sprint(st), nil
	})
	return snap
}

func testDeletionRemovesLV(t *testing.T) {
	fullSetOnly(t, "a claim deleted by name removes its LogicalVolume and LV (GenericEphemeralVolume proves the "+
		"same removal, of a claim its pod's deletion collects)")
	e := newEnv(t)
	e.claim("gone", thinClass, "1Gi", false, "")
	e.pod("user", "gone", false, "", writeScript)
	pod, _ := e.finished("user")
	pv, lv := e.volumeOf("gone")
	id := pv.Spec.CSI.VolumeHandle
	if lvAttr(e.lvs(pod.Spec.NodeName), id) == "" {
		t.Fatalf("LV %s is not on node %s", id, pod.Spec.NodeName)
	}
	if err := e.c.Delete(e.ctx(), pod); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(
		e.ctx(),
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: e.ns}},
	); err != nil {
		t.Fatal(err)
	}
	e.waitGone(lv)
	if out := e.lvs(pod.Spec.NodeName); lvAttr(out, id) != "" {
		t.Fatalf("LV %s is still on node %s:\n%s", id, pod.Spec.NodeName, out)
	}
}
