//go:build guest

package node_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

const guestKey = "correct horse battery staple"

// TestGuestNodeEncryptedLifecycle drives an encrypted (LUKS2) volume on real cryptsetup, dm-crypt
// and lvm2 the way the kubelet does: stage (luksFormat and open), publish (mkfs and mount of the
// mapping), write, unpublish and unstage (the mapping is closed), a wrong key is refused, stage and
// publish again (the data is still there, no second luksFormat), unstage is refused while published,
// the LV grows and NodeExpandVolume grows the mapping and the filesystem on it.
func TestGuestNodeEncryptedLifecycle(t *testing.T) {
	g := newGuestNode(t)
	t.Logf(
		"kernel: dm-crypt modules %q",
		g.sh(
			t,
			"sh",
			"-c",
			"lsmod | grep -E '^(dm_crypt|xts|algif_skcipher|encrypted_keys) ' | cut -d' ' -f1 | tr '\\n' ' '",
		),
	)
	for _, class := range []string{"thick", "thin"} {
		t.Run(class, func(t *testing.T) { g.encryptedLifecycle(t, class) })
	}
}

func (g *guestNode) encryptedLifecycle(t *testing.T, class string) {
	ctx := t.Context()
	id := "luks-" + class
	size := uint64(lvmcsi.MinSizeExt4 + lvmcsi.LUKS2HeaderSize)
	lv, err := g.lvmd.CreateLV(ctx, lvmd.CreateLVRequest{Name: id, DeviceClass: class, Size: size})
	must(t, err)
	t.Cleanup(func() {
		if err := g.lvmd.RemoveLV(context.Background(), id, class); err != nil {
			t.Errorf("remove LV %s: %v", id, err)
		}
	})
	mapping := "/dev/mapper/lvms-" + id
	target := filepath.Join(g.kubeletDir, "pods", id, "volumes", "kubernetes.io~csi", id, "mount")

	g.stage(t, id, guestKey)
	dump := g.sh(t, "cryptsetup", "luksDump", lv.Path)
	version := firstLine(dump, "Version:")
	t.Logf("cryptsetup luksDump %s: %q", lv.Path, version)
	if strings.Join(strings.Fields(version), " ") != "Version: 2" {
		t.Fatalf("luksDump of %s shows %q, want LUKS2:\n%s", lv.Path, version, dump)
	}
	uuid := g.sh(t, "cryptsetup", "luksUUID", lv.Path)
	g.publishEncrypted(t, id, target, mapping)
	data := bytes.Repeat([]byte("plaintext marker "+id+"\n"), (4<<20)/len(id))
	must(t, writeSynced(filepath.Join(target, "data"), data))
	g.checkCiphertext(t, lv.Path, []byte("plaintext marker "+id))

	// Unstaging a published volume is refused; the mapping stays.
	_, err = g.srv.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: g.staging(id)})
	wantGuestCode(t, err, codes.FailedPrecondition)
	t.Logf("unstage while published: %v", err)
	g.unpublish(t, id, target)
	g.unstage(t, id, mapping)

	_, err = g.srv.NodeStageVolume(ctx, g.stageReq(id, "not the key"))
	wantGuestCode(t, err, codes.PermissionDenied)
	t.Logf("stage with a wrong key: %v", err)
	if _, err := os.Stat(mapping); !os.IsNotExist(err) {
		t.Errorf("a wrong key left %s behind (%v)", mapping, err)
	}

	g.stage(t, id, guestKey)
	if again := g.sh(t, "cryptsetup", "luksUUID", lv.Path); again != uuid {
		t.Fatalf("LUKS UUID %s after restaging, was %s: reformatted", again, uuid)
	}
	g.publishEncrypted(t, id, target, mapping)
	g.checkData(t, target, data)

	before := fsBytes(t, target)
	grown, err := g.lvmd.ResizeLV(ctx, id, class, 2*size)
	must(t, err)
	resp, err := g.srv.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{
		VolumeId: id, VolumePath: target, VolumeCapability: mountCap(lvmcsi.FSExt4),
		Secrets: map[string]string{lvmcsi.SecretKeyPassphrase: guestKey},
	})
	must(t, err)
	after := fsBytes(t, target)
	t.Logf("NodeExpandVolume %s: LV %d -> %d bytes (response %d), ext4 on the mapping %d -> %d bytes",
		id, lv.Size, grown.Size, resp.GetCapacityBytes(), before, after)
	if after < before+(grown.Size-lv.Size)*8/10 {
		t.Errorf("the filesystem in %s did not grow with its LV: %d -> %d bytes", mapping, before, after)
	}
	g.checkData(t, target, data)
	g.unpublish(t, id, target)
	g.unstage(t, id, mapping)
}

func (g *guestNode) staging(id string) string {
	return filepath.Join(g.kubeletDir, "plugins", "kubernetes.io", "csi", driver.Name, id, "globalmount")
}

func (g *guestNode) stageReq(id, key string) *csi.NodeStageVolumeRequest {
	return &csi.NodeStageVolumeRequest{
		VolumeId: id, StagingTargetPath: g.staging(id), VolumeCapability: mountCap(lvmcsi.FSExt4),
		VolumeContext: map[string]string{driver.ParamEncryption: lvmcsi.EncryptionLUKS2},
		Secrets:       map[string]string{lvmcsi.SecretKeyPassphrase: key},
	}
}

func (g *guestNode) stage(t *testing.T, id, key string) {
	t.Helper()
	must(t, os.MkdirAll(g.staging(id), 0o750))
	for i := range 2 { // the repeat finds the mapping open
		start := time.Now()
		_, err := g.srv.NodeStageVolume(t.Context(), g.stageReq(id, key))
		must(t, err)
		t.Logf("NodeStageVolume %s #%d (%s)", id, i+1, time.Since(start).Round(time.Millisecond))
	}
}

func (g *guestNode) unstage(t *testing.T, id, mapping string) {
	t.Helper()
	for range 2 { // idempotent
		_, err := g.srv.NodeUnstageVolume(t.Context(),
			&csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: g.staging(id)})
		must(t, err)
	}
	_, err := exec.Run(t.Context(), g.host, "cryptsetup", "status", "lvms-"+id)
	if !exec.HasExitCode(err, 4) {
		t.Errorf("after NodeUnstageVolume: cryptsetup status lvms-%s: %v, want inactive (exit 4)", id, err)
	}
	if _, err := os.Stat(mapping); !os.IsNotExist(err) {
		t.Errorf("after NodeUnstageVolume: %s still exists (%v)", mapping, err)
	}
}

func (g *guestNode) publishEncrypted(t *testing.T, id, target, mapping string) {
	t.Helper()
	_, err := g.srv.NodePublishVolume(t.Context(), &csi.NodePublishVolumeRequest{
		VolumeId: id, TargetPath: target, StagingTargetPath: g.staging(id), VolumeCapability: mountCap(lvmcsi.FSExt4),
		VolumeContext: map[string]string{driver.ParamEncryption: lvmcsi.EncryptionLUKS2},
	})
	must(t, err)
	mp := g.mountAt(t, target)
	if mp == nil || mp.Type != lvmcsi.FSExt4 || resolveBlock(t, mp.Device) != resolveBlock(t, mapping) {
		t.Fatalf("after NodePublishVolume %s: mount at %s is %+v, want ext4 from %s", id, target, mp, mapping)
	}
}

// checkCiphertext fails when the plaintext marker is readable on the LV itself.
func (g *guestNode) checkCiphertext(t *testing.T, lvPath string, marker []byte) {
	t.Helper()
	raw, err := os.ReadFile(lvPath)
	must(t, err)
	if bytes.Contains(raw, marker) {
		t.Errorf("the plaintext %q is readable on the LV %s", marker, lvPath)
	}
}

// resolveBlock returns the device number of a block device node.
func resolveBlock(t *testing.T, p string) uint64 {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Stat(p, &st))
	return st.Rdev
}

func fsBytes(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Statfs_t
	must(t, unix.Statfs(path, &st))
	return st.Blocks * uint64(st.Bsize)
}

func firstLine(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func wantGuestCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("got %v (code %s), want %s", err, status.Code(err), code)
	}
}
