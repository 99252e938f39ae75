//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

const (
	// tenantThin is the thin device class of this test alone (/dev/ubdd, a pool of 10% of the disk),
	// so that what the second tenant gets is predictable; tenantThinVG its volume group, tenantPool
	// its thin pool. The thick half uses the suite's thick class on a node where it holds no LV.
	tenantThin   = "lvms-tenant-thin"
	tenantThinVG = "tenant-thin"
	tenantPool   = "tenant-pool"
	thickVG      = "thick"
	// tenantMarker is the first tenant's data, one per line.
	tenantMarker = "PREVIOUS-TENANT-DATA"
	// thickTenantSize is small: the thick volume group is empty, so both LVs start at its first
	// extent. thickStride is the distance of the marker blocks in it.
	thickTenantSize = 64 << 20
	thickStride     = 4 << 20
	// thinTenantSize is over half the thin pool (about 819 MiB): the second tenant's chunks cannot
	// all be new, at least 2 x 512 MiB - the pool's size of them were the first tenant's.
	thinTenantSize = 512 << 20
)

// TestNoDataAcrossTenants: what a Block PVC's pod wrote is not readable by the pod of the next PVC
// of the same size on the same class and node, thick and thin. The test proves that the new volume
// sits where the old one was: thick by comparing the LVs' extents, thin by sizes (both volumes'
// chunks do not fit the pool side by side, so the second reuses at least 25 of the first's 64).
// The first tenant writes a 4 KiB block of a marker into the middle of every chunk (thick: every
// 4 MiB); the second reads those blocks back, after writing the head of every thin chunk: a partly
// written chunk that the pool did not zero is where old data would show. (Blocks, not whole
// volumes: a single-CPU node pumps a few MiB a second through a shell pipe.)
func TestNoDataAcrossTenants(t *testing.T) {
	e := newEnv(t)
	node := e.nodeWithoutThickLVs()
	chunk, pool := e.thinPool(node)
	if 2*thinTenantSize <= pool {
		t.Fatalf("thin pool %s/%s holds %d bytes: two %d-byte volumes fit side by side, the test would prove nothing",
			tenantThinVG, tenantPool, pool, thinTenantSize)
	}
	thick := blockOffsets(thickTenantSize, thickStride)
	thin := blockOffsets(thinTenantSize, chunk)
	pod, out := e.tenant("first", node,
		"yes "+tenantMarker+" | head -c 4096 > /tmp/marker",
		writeBlocks("/tmp/marker", "/dev/xvda", thick),
		writeBlocks("/tmp/marker", "/dev/xvdb", thin),
		"sync",
		countBlocks("first-thick", "/dev/xvda", thick),
		countBlocks("first-thin", "/dev/xvdb", thin))
	for _, name := range []string{"first-thick", "first-thin"} {
		if markerLines(t, out, name) == 0 {
			t.Fatalf("the first tenant's volume %s does not hold the marker: %s", name, out)
		}
	}
	_, oldThick := e.volumeOf("first-thick")
	_, oldThin := e.volumeOf("first-thin")
	before := e.extents(node, thickVG, oldThick.Status.VolumeID)

	if err := e.c.Delete(e.ctx(), pod); err != nil {
		t.Fatal(err)
	}
	e.waitGone(pod)
	for _, name := range []string{"first-thick", "first-thin"} {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}
		if err := e.c.Delete(e.ctx(), pvc); err != nil {
			t.Fatal(err)
		}
	}
	e.waitGone(oldThick)
	e.waitGone(oldThin)

	_, out = e.tenant("second", node,
		chunkHeads("/dev/xvdb", thinTenantSize, chunk),
		"sync",
		countBlocks("second-thick", "/dev/xvda", thick),
		countBlocks("second-thin", "/dev/xvdb", thin))
	_, newThick := e.volumeOf("second-thick")
	if after := e.extents(node, thickVG, newThick.Status.VolumeID); after != before {
		t.Fatalf(
			"the second thick LV is on %q, not on the first one's extents %q: the test proves nothing",
			after,
			before,
		)
	}
	for _, name := range []string{"second-thick", "second-thin"} {
		if n := markerLines(t, out, name); n != 0 {
			t.Fatalf("the second tenant's %s shows %d lines of the first tenant's data: %s", name, n, out)
		}
	}
	t.Logf("second tenant on %s (thick on %s; thin pool of %d MiB, chunk %d MiB: at least %d of its %d chunks "+
		"were the first tenant's): %s", node, before, pool>>20, chunk>>20, (2*thinTenantSize-pool)/chunk,
		thinTenantSize/chunk, out)
}

// tenant creates the Block claims <name>-thick (thick class) and <name>-thin (the tenant thin class)
// and a pod on node that has them at /dev/xvda and /dev/xvdb and runs the steps; it returns the
// pod once it succeeded, and its output.
func (e *env) tenant(name, node string, steps ...string) (*corev1.Pod, string) {
	e.t.Helper()
	e.claim(name+"-thick", thickClass, strconv.Itoa(thickTenantSize), true, "")
	e.claim(name+"-thin", tenantThin, strconv.Itoa(thinTenantSize), true, "")
	pod := newPod(name, strings.Join(append([]string{"set -e"}, steps...), "; "))
	useClaim(pod, name+"-thick", "", "/dev/xvda")
	useClaim(pod, name+"-thin", "", "/dev/xvdb")
	pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	e.create(pod)
	return e.finished(name)
}

// blockOffsets are the offsets of the marker blocks: the middle of every stride of size bytes.
func blockOffsets(size, stride int) []int {
	var out []int
	for off := 0; off < size; off += stride {
		out = append(out, off+stride/2)
	}
	return out
}

// writeBlocks copies the 4 KiB block src to dev at each offset.
func writeBlocks(src, dev string, offsets []int) string {
	return fmt.Sprintf("for o in %s; do dd if=%s of=%s bs=4096 count=1 seek=$o conv=notrunc 2>/dev/null; done",
		blocks(offsets), src, dev)
}

// chunkHeads writes 4 KiB of zeroes at the start of every chunk of the first size bytes of dev:
// each write provisions a chunk, and the rest of that chunk is what the pool gives.
func chunkHeads(dev string, size, chunk int) string {
	var heads []int
	for off := 0; off < size; off += chunk {
		heads = append(heads, off)
	}
	return fmt.Sprintf("for o in %s; do dd if=/dev/zero of=%s bs=4096 count=1 seek=$o conv=notrunc 2>/dev/null; done",
		blocks(heads), dev)
}

// countBlocks prints name=<lines of the marker in the 4 KiB blocks of dev at offsets>. NULs are
// dropped: a zeroed block is no line at all.
func countBlocks(name, dev string, offsets []int) string {
	return fmt.Sprintf(
		`echo "%s=$(for o in %s; do dd if=%s bs=4096 count=1 skip=$o 2>/dev/null; done | tr -d '\000' | grep -c %s || true)"`,
		name,
		blocks(offsets),
		dev,
		tenantMarker,
	)
}

// blocks is the offsets in 4 KiB blocks, space separated.
func blocks(offsets []int) string {
	out := make([]string, len(offsets))
	for i, o := range offsets {
		out[i] = strconv.Itoa(o / 4096)
	}
	return strings.Join(out, " ")
}

// markerLines is the count countScript printed for name.
func markerLines(t *testing.T, out, name string) int {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(line, name+"="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("count of %s: %q", name, line)
			}
			return n
		}
	}
	t.Fatalf("no count of %s in: %s", name, out)
	return 0
}

// nodeWithoutThickLVs waits until a node holds no LogicalVolume of the thick class (the flows
// before this test delete theirs as they end) and returns it: there the first thick LV starts at the
// volume group's first extent, and so does the next one once it is gone.
func (e *env) nodeWithoutThickLVs() string {
	e.t.Helper()
	var node string
	nodes := e.nodes()
	e.waitFor("a node without thick LogicalVolumes", func(ctx context.Context) (bool, string, error) {
		var lvs topolvmv1.LogicalVolumeList
		if err := e.c.List(ctx, &lvs); err != nil {
			return false, "", err
		}
		used := map[string]int{}
		for _, lv := range lvs.Items {
			if lv.Spec.DeviceClass == thickVG {
				used[lv.Spec.NodeName]++
			}
		}
		for _, n := range nodes {
			if used[n] == 0 {
				node = n
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("thick LogicalVolumes per node %v", used), nil
	})
	return node
}

// extents is the devices column of LV vg/name on node ("/dev/ubdb(0)").
func (e *env) extents(node, vg, name string) string {
	e.t.Helper()
	out := strings.TrimSpace(e.onAgent(node, fmt.Sprintf("lvs --noheadings -o devices %s/%s", vg, name)))
	if out == "" {
		e.t.Fatalf("no extents for LV %s/%s on %s", vg, name, node)
	}
	return out
}

// thinPool returns the chunk size and the data size in bytes of the tenant thin pool on node.
func (e *env) thinPool(node string) (chunk, size int) {
	e.t.Helper()
	out := e.onAgent(node, fmt.Sprintf(
		"lvs --noheadings --nosuffix --units b -o chunk_size,lv_size %s/%s", tenantThinVG, tenantPool))
	f := strings.Fields(out)
	if len(f) != 2 {
		e.t.Fatalf("thin pool %s/%s on %s: %q", tenantThinVG, tenantPool, node, out)
	}
	chunk, err1 := strconv.Atoi(f[0])
	size, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || chunk < 4096 || chunk%4096 != 0 {
		e.t.Fatalf("thin pool %s/%s on %s: %q", tenantThinVG, tenantPool, node, out)
	}
	return chunk, size
}
