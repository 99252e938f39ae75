package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	mount "k8s.io/mount-utils"

	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

const (
	nodeName = "node-1"
	volID    = "vol-1"
	dev      = "/dev/lvms/vol-1"
	volSize  = int64(1 << 30)
)

// fakeVolumes is a node with the LVs it holds.
type fakeVolumes map[string]string // volume ID → device

func (f fakeVolumes) Device(_ context.Context, id string) (string, int64, error) {
	if d, ok := f[id]; ok {
		return d, volSize, nil
	}
	return "", 0, fmt.Errorf("lv %s: %w", id, ErrVolumeNotFound)
}

type fixture struct {
	srv     *Server
	mounter *mount.FakeMounter
	exec    *exectest.Fake
	dir     string
}

// probeLine reports whether l is one of the commands that probe dev's signatures.
func probeLine(l string) bool {
	return l == "blkid -p -o export "+dev || l == "wipefs --no-act --json "+dev
}

// newFixture is a node holding volID on dev, whose blkid reports fsType ("" = blank).
func newFixture(t *testing.T, fsType string) *fixture {
	t.Helper()
	f := &fixture{mounter: mount.NewFakeMounter(nil), exec: exectest.New(), dir: t.TempDir()}
	if fsType == "" {
		f.exec.On(exectest.Fail(2, ""), "blkid", "-p", "-o", "export", dev).
			On(exectest.OK(`{"signatures":[]}`), "wipefs", "--no-act", "--json", dev)
	} else {
		f.exec.On(exectest.OK("DEVNAME="+dev+"\nUUID=1234\nTYPE="+fsType+"\nUSAGE=filesystem\n"),
			"blkid", "-p", "-o", "export", dev)
		// Publishing a volume that carries a filesystem grows it to the device (a no-op here).
		f.exec.On(exectest.OK(""), "resize2fs", dev)
	}
	srv, err := New(Options{
		NodeName: nodeName, Volumes: fakeVolumes{volID: dev}, Mounter: f.mounter, Exec: f.exec, KubeletDir: f.dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	// A plain volume: no device node of its dm-crypt mapping.
	srv.mapperDir = t.TempDir()
	f.srv = srv
	return f
}

func (f *fixture) target(name string) string { return filepath.Join(f.dir, "pods", name) }

func mountCap(fs string, flags ...string) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{
			Mount: &csi.VolumeCapability_MountVolume{FsType: fs, MountFlags: flags},
		},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

func blockCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

func publishReq(target string, c *csi.VolumeCapability, readonly bool) *csi.NodePublishVolumeRequest {
	return &csi.NodePublishVolumeRequest{VolumeId: volID, TargetPath: target, VolumeCapability: c, Readonly: readonly}
}

func wantCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("got %v (code %s), want %s", err, status.Code(err), code)
	}
}

func TestNodeGetInfo(t *testing.T) {
	resp, err := newFixture(t, "").srv.NodeGetInfo(t.Context(), &csi.NodeGetInfoRequest{})
	if err != nil || resp.GetNodeId() != nodeName || resp.GetMaxVolumesPerNode() != 0 ||
		resp.GetAccessibleTopology().GetSegments()[driver.TopologyNodeKey] != nodeName {
		t.Fatalf("got %v, %v", resp, err)
	}
}

func TestNodeGetCapabilities(t *testing.T) {
	resp, err := newFixture(t, "").srv.NodeGetCapabilities(t.Context(), &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []csi.NodeServiceCapability_RPC_Type
	for _, c := range resp.GetCapabilities() {
		got = append(got, c.GetRpc().GetType())
	}
	for _, want := range []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH,
	} {
		if !slices.Contains(got, want) {
			t.Errorf("capability %s missing from %v", want, got)
		}
	}
	if !slices.Contains(got, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME) {
		t.Errorf("STAGE_UNSTAGE not advertised: the kubelet would never stage encrypted volumes")
	}
}

func TestNewRequiresDependencies(t *testing.T) {
	if _, err := New(Options{NodeName: nodeName}); err == nil {
		t.Fatal("New accepted missing dependencies")
	}
}

func TestOperationsOnOneVolumeAreAborted(t *testing.T) {
	f := newFixture(t, "ext4")
	release, err := f.srv.locks.Lock(volID)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	_, err = f.srv.NodePublishVolume(t.Context(), publishReq(f.target("a"), mountCap("ext4"), false))
	wantCode(t, err, codes.Aborted)
	_, err = f.srv.NodeUnpublishVolume(
		t.Context(),
		&csi.NodeUnpublishVolumeRequest{VolumeId: volID, TargetPath: f.target("a")},
	)
	wantCode(t, err, codes.Aborted)
	_, err = f.srv.NodeExpandVolume(
		t.Context(),
		&csi.NodeExpandVolumeRequest{VolumeId: volID, VolumePath: f.target("a")},
	)
	wantCode(t, err, codes.Aborted)
}

func fileExists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Stat(p)
	return err == nil
}
