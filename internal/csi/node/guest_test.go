//go:build guest

package node_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	mount "k8s.io/mount-utils"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/csi/node"
	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/nodeagent"
	"github.com/lvm-operator/lvm-operator/internal/testing/umlguest"
)

// Guest tests run inside a User-mode Linux guest (hack/test-lvm.sh) as root with real lvm2,
// device-mapper, mkfs and mounts, on the disks in LVMS_GUEST_DISKS. They drive the CSI node service
// as the kubelet would, over LVs made by lvmd and located through the node agent's Volumes.

const (
	mib    = uint64(1) << 20
	vgName = "gcsi"
)

// guestNode is the node service wired as `lvms node` wires it, over a VG with a thick and a thin class.
type guestNode struct {
	t       *testing.T
	host    *exec.Host
	lvmd    *lvmd.Service
	srv     *node.Server
	mounter mount.Interface
	// kubeletDir holds the targets (the service refuses paths outside it).
	kubeletDir string
}

func newGuestNode(t *testing.T) *guestNode {
	t.Helper()
	disk := umlguest.Disks(t, 0, 1)[0]
	h := exec.NewHost()
	ctx := t.Context()
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = exec.Run(cctx, h, "lvm", "vgremove", "-f", "-y", vgName)
		_, _ = exec.Run(cctx, h, "lvm", "pvremove", "-ff", "-y", disk)
		_, _ = exec.Run(cctx, h, "wipefs", "--all", "--force", disk)
	})
	lv := lvm.New(h)
	must(t, lv.CreateVG(ctx, vgName, []string{disk}))
	vg, err := lv.OwnedVG(ctx, vgName)
	must(t, err)
	must(t, lv.CreateThinPool(ctx, vg, lvm.ThinPoolOptions{Name: "pool", Size: 1 << 30}))
	spare := uint64(0)
	classes, err := lvmd.NewDeviceClassManager(&lvmd.Config{DeviceClasses: []lvmd.DeviceClass{
		{Name: "thick", VolumeGroup: vgName, Default: true, SpareGB: &spare},
		{
			Name: "thin", VolumeGroup: vgName, Type: lvmd.TypeThin,
			ThinPool: &lvmd.ThinPoolConfig{Name: "pool", OverprovisionRatio: 2},
		},
	}})
	must(t, err)
	svc, err := lvmd.NewService(lvmd.Options{Executor: h, Classes: classes})
	must(t, err)
	must(t, svc.Refresh(ctx))
	g := &guestNode{t: t, host: h, lvmd: svc, mounter: mount.New(""), kubeletDir: t.TempDir()}
	g.srv, err = node.New(node.Options{
		NodeName: "guest", Volumes: nodeagent.NewVolumes(svc), Mounter: g.mounter, Exec: h,
		KubeletDir: g.kubeletDir,
	})
	must(t, err)
	return g
}

// TestGuestNodeFilesystemLifecycle publishes a fresh LV of each filesystem at its minimum size, writes
// through the mount, checks NodeGetVolumeStats against the filesystem's own view, unpublishes and
// republishes it (the data stays, no second mkfs), doubles the LV through lvmd, grows the mounted
// filesystem with NodeExpandVolume and unpublishes it cleanly.
func TestGuestNodeFilesystemLifecycle(t *testing.T) {
	g := newGuestNode(t)
	for _, tt := range []struct{ fs, class string }{
		{lvmcsi.FSExt4, "thick"},
		{lvmcsi.FSXFS, "thin"},
		{lvmcsi.FSBtrfs, "thick"},
		{lvmcsi.FSBtrfs, "thin"},
	} {
		t.Run(tt.fs+"/"+tt.class, func(t *testing.T) { g.lifecycle(t, tt.fs, tt.class) })
	}
}

func (g *guestNode) lifecycle(t *testing.T, fsType, class string) {
	ctx := t.Context()
	id := fsType + "-" + class
	size := uint64(lvmcsi.MinimumSize(fsType, false))
	lv, err := g.lvmd.CreateLV(ctx, lvmd.CreateLVRequest{Name: id, DeviceClass: class, Size: size})
	must(t, err)
	t.Cleanup(func() {
		if err := g.lvmd.RemoveLV(context.Background(), id, class); err != nil {
			t.Errorf("remove LV %s: %v", id, err)
		}
	})
	target := filepath.Join(g.kubeletDir, "pods", id, "volumes", "kubernetes.io~csi", id, "mount")
	mkfs := "mkfs." + fsType

	mkfsBefore := g.host.Counter().Count(mkfs)
	g.publish(t, id, target, fsType)
	if n := g.host.Counter().Count(mkfs) - mkfsBefore; n != 1 {
		t.Errorf("first publish ran %s %d times, want 1", mkfs, n)
	}
	uuid := g.sh(t, "blkid", "-p", "-s", "UUID", "-o", "value", lv.Path)
	data := bytes.Repeat([]byte(id), (8<<20)/len(id))
	must(t, writeSynced(filepath.Join(target, "data"), data))
	total := g.checkStats(t, id, target, fsType, lv.Size, uint64(len(data)))

	g.unpublish(t, id, target)
	g.publish(t, id, target, fsType)
	if n := g.host.Counter().Count(mkfs) - mkfsBefore; n != 1 {
		t.Errorf("republish ran %s again (%d in all)", mkfs, n)
	}
	if again := g.sh(t, "blkid", "-p", "-s", "UUID", "-o", "value", lv.Path); again != uuid {
		t.Errorf("filesystem UUID %s after republish, was %s: reformatted", again, uuid)
	}
	g.checkData(t, target, data)

	grown, err := g.lvmd.ResizeLV(ctx, id, class, 2*size)
	must(t, err)
	start := time.Now()
	resp, err := g.srv.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{
		VolumeId: id, VolumePath: target, VolumeCapability: mountCap(fsType),
		CapacityRange: &csi.CapacityRange{RequiredBytes: int64(grown.Size)},
	})
	must(t, err)
	t.Logf("NodeExpandVolume %s: LV %d -> %d bytes, response capacity %d (%s)", id, lv.Size, grown.Size,
		resp.GetCapacityBytes(), time.Since(start).Round(time.Millisecond))
	if resp.GetCapacityBytes() != int64(grown.Size) {
		t.Errorf("NodeExpandVolume capacity %d, want the LV size %d", resp.GetCapacityBytes(), grown.Size)
	}
	after := g.checkStats(t, id, target, fsType, grown.Size, uint64(len(data)))
	if after < total+(grown.Size-lv.Size)*8/10 {
		t.Errorf(
			"%s did not grow with its LV: total %d -> %d bytes, LV %d -> %d",
			id,
			total,
			after,
			lv.Size,
			grown.Size,
		)
	}
	g.checkData(t, target, data)
	g.unpublish(t, id, target)
}

func (g *guestNode) publish(t *testing.T, id, target, fsType string) {
	t.Helper()
	start := time.Now()
	_, err := g.srv.NodePublishVolume(t.Context(), &csi.NodePublishVolumeRequest{
		VolumeId: id, TargetPath: target, VolumeCapability: mountCap(fsType),
	})
	must(t, err)
	t.Logf("NodePublishVolume %s (%s)", id, time.Since(start).Round(time.Millisecond))
	if mp := g.mountAt(t, target); mp == nil || mp.Type != fsType {
		t.Fatalf("after NodePublishVolume %s: mount at %s is %+v, want type %s", id, target, mp, fsType)
	}
}

func (g *guestNode) unpublish(t *testing.T, id, target string) {
	t.Helper()
	_, err := g.srv.NodeUnpublishVolume(t.Context(), &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
	must(t, err)
	if mp := g.mountAt(t, target); mp != nil {
		t.Fatalf("after NodeUnpublishVolume %s: still mounted %+v", id, mp)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("after NodeUnpublishVolume %s: target %s still exists (%v)", id, target, err)
	}
}

// mountAt returns the mount at path, nil when there is none.
func (g *guestNode) mountAt(t *testing.T, path string) *mount.MountPoint {
	t.Helper()
	mps, err := g.mounter.List()
	must(t, err)
	for _, mp := range mps {
		if mp.Path == path {
			return &mp
		}
	}
	return nil
}

func (g *guestNode) checkData(t *testing.T, target string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(target, "data"))
	must(t, err)
	if !bytes.Equal(got, want) {
		t.Errorf(
			"data read back through %s differs from what was written (%d bytes, want %d)",
			target,
			len(got),
			len(want),
		)
	}
}

// sh runs a command that must succeed and returns its trimmed output.
func (g *guestNode) sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Run(t.Context(), g.host, name, args...)
	if err != nil {
		t.Fatalf("%s: %v", exec.CommandLine(name, args), err)
	}
	return strings.TrimSpace(string(out))
}

// writeSynced writes a file and syncs its whole filesystem. An fsync alone is not enough for the
// stats: btrfs then writes the data and its log tree, but statfs counts the data as used only after
// the transaction commits (measured: 8 MiB written and fsynced, 6062080 bytes used, the fresh
// filesystem's own metadata), which syncfs forces and the periodic commit (30 s) does anyway.
func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = unix.Syncfs(int(f.Fd()))
	}
	return errors.Join(err, f.Close())
}

func mountCap(fsType string) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestGuestNodeCloneBesideOrigin publishes a writable thin snapshot (a clone or a restored volume) of
// a filesystem volume on the same node while the origin stays mounted, as a pod using both would:
// the clone must mount, show the origin's data and not be reformatted.
func TestGuestNodeCloneBesideOrigin(t *testing.T) {
	g := newGuestNode(t)
	for _, fsType := range []string{lvmcsi.FSExt4, lvmcsi.FSXFS, lvmcsi.FSBtrfs} {
		t.Run(fsType, func(t *testing.T) { g.cloneBesideOrigin(t, fsType) })
	}
}

func (g *guestNode) cloneBesideOrigin(t *testing.T, fsType string) {
	ctx := t.Context()
	id, cloneID := "origin-"+fsType, "clone-"+fsType
	_, err := g.lvmd.CreateLV(ctx, lvmd.CreateLVRequest{
		Name: id, DeviceClass: "thin", Size: uint64(lvmcsi.MinimumSize(fsType, false)),
	})
	must(t, err)
	t.Cleanup(func() {
		for _, name := range []string{cloneID, id} {
			if err := g.lvmd.RemoveLV(context.Background(), name, "thin"); err != nil {
				t.Errorf("remove LV %s: %v", name, err)
			}
		}
	})
	target := filepath.Join(g.kubeletDir, "pods", "a", id, "mount")
	g.publish(t, id, target, fsType)
	t.Cleanup(func() { g.unpublish(t, id, target) })
	data := bytes.Repeat([]byte(id), (1<<20)/len(id))
	must(t, writeSynced(filepath.Join(target, "data"), data))

	// The same volume at a second target (another pod of a ReadWriteOnce volume) shares the mount.
	tunes := g.host.Counter().Count("btrfstune")
	second := filepath.Join(g.kubeletDir, "pods", "a2", id, "mount")
	g.publish(t, id, second, fsType)
	if g.host.Counter().Count("btrfstune") != tunes {
		t.Errorf("publishing %s at a second target ran btrfstune", id)
	}
	g.checkData(t, second, data)
	g.unpublish(t, id, second)

	clone, err := g.lvmd.CreateSnapshot(ctx, lvmd.SnapshotRequest{Name: cloneID, DeviceClass: "thin", Source: id})
	must(t, err)
	uuid := g.sh(t, "blkid", "-p", "-s", "UUID", "-o", "value", clone.Path)
	mkfsBefore := g.host.Counter().Count("mkfs." + fsType)
	cloneTarget := filepath.Join(g.kubeletDir, "pods", "b", cloneID, "mount")
	g.publish(t, cloneID, cloneTarget, fsType)
	if n := g.host.Counter().Count("mkfs."+fsType) - mkfsBefore; n != 0 {
		t.Errorf("publishing the clone ran mkfs.%s %d times", fsType, n)
	}
	cloneUUID := g.sh(t, "blkid", "-p", "-s", "UUID", "-o", "value", clone.Path)
	originUUID := g.sh(t, "blkid", "-p", "-s", "UUID", "-o", "value", "/dev/"+vgName+"/"+id)
	t.Logf("%s: origin UUID %s, clone UUID %s before publish, %s after", fsType, originUUID, uuid, cloneUUID)
	// Only btrfs needs its own fsid (xfs mounts with nouuid, ext4 does not care); the origin keeps its own.
	wantTunes := 0
	if fsType == lvmcsi.FSBtrfs {
		wantTunes = 1
	}
	if n := g.host.Counter().Count("btrfstune") - tunes; n != wantTunes {
		t.Errorf("btrfstune ran %d times, want %d", n, wantTunes)
	}
	if originUUID != uuid || (cloneUUID != uuid) == (fsType != lvmcsi.FSBtrfs) {
		t.Errorf("%s: origin UUID %s, clone UUID %s before publish and %s after", fsType, originUUID, uuid, cloneUUID)
	}
	g.checkData(t, cloneTarget, data)
	must(t, writeSynced(filepath.Join(cloneTarget, "data"), []byte("changed in the clone")))
	g.checkData(t, target, data)
	g.unpublish(t, cloneID, cloneTarget)
}
