package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	mount "k8s.io/mount-utils"

	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

func TestNodePublishFilesystem(t *testing.T) {
	tests := []struct {
		name     string
		existing string // filesystem blkid finds; "" = blank
		cap      *csi.VolumeCapability
		readonly bool
		wantCmd  string   // command line of the expected mkfs or filesystem grow, "" = none
		wantFS   string   // mounted filesystem
		wantOpts []string // mount options
	}{
		{"blank ext4", "", mountCap("ext4"), false, "mkfs.ext4 " + dev, "ext4", nil},
		{"default is ext4", "", mountCap(""), false, "mkfs.ext4 " + dev, "ext4", nil},
		{"blank xfs mounts nouuid", "", mountCap("xfs"), false, "mkfs.xfs " + dev, "xfs", []string{"nouuid"}},
		{"blank btrfs", "", mountCap("btrfs"), false, "mkfs.btrfs " + dev, "btrfs", nil},
		// A restore into a larger claim carries its origin's smaller filesystem: it grows to the LV.
		{"formatted xfs is grown, not reformatted", "xfs", mountCap("xfs"), false, "xfs_growfs <target>", "xfs",
			[]string{"nouuid"}},
		{"formatted ext4 is grown", "ext4", mountCap("ext4"), false, "resize2fs " + dev, "ext4", nil},
		// btrfs refuses any resize under 256 MiB: a volume it already carries is mounted as it is.
		{"formatted btrfs is not grown", "btrfs", mountCap("btrfs"), false, "", "btrfs", nil},
		{"formatted ext4 read-only with flags is left as it is", "ext4", mountCap("ext4", "noatime"), true, "",
			"ext4", []string{"noatime", "ro"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.existing)
			target := f.target("fs")
			f.exec.On(exectest.OK(""), "mkfs.ext4", dev).On(exectest.OK(""), "mkfs.xfs", dev).
				On(exectest.OK(""), "mkfs.btrfs", dev).On(exectest.OK(""), "resize2fs", dev).
				On(exectest.OK(""), "xfs_growfs", target)
			want := strings.ReplaceAll(tt.wantCmd, "<target>", target)
			for range 2 { // the repeat finds the target mounted and does nothing
				if _, err := f.srv.NodePublishVolume(t.Context(), publishReq(target, tt.cap, tt.readonly)); err != nil {
					t.Fatalf("NodePublishVolume: %v", err)
				}
			}
			var cmds []string
			for _, l := range f.exec.Lines() {
				if !probeLine(l) {
					cmds = append(cmds, l)
				}
			}
			if want == "" && len(cmds) > 0 || want != "" && !slices.Equal(cmds, []string{want}) {
				t.Errorf("commands %q, want %q once", cmds, want)
			}
			mps, _ := f.mounter.List()
			if len(mps) != 1 {
				t.Fatalf("mount points %+v, want one", mps)
			}
			mp := mps[0]
			if mp.Device != dev || mp.Path != target || mp.Type != tt.wantFS || !slices.Equal(mp.Opts, tt.wantOpts) {
				t.Errorf("mounted %+v, want %s on %s type %s options %q", mp, dev, target, tt.wantFS, tt.wantOpts)
			}
		})
	}
}

func TestNodePublishRefusesAnotherFilesystem(t *testing.T) {
	tests := []struct {
		name, existing, blkid, requested string
	}{
		{"xfs device, ext4 asked", "xfs", "", "ext4"},
		{"ext4 device, xfs asked", "ext4", "", "xfs"},
		{"partition table", "", "DEVNAME=" + dev + "\nPTUUID=abc\nPTTYPE=gpt\n", "ext4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.existing)
			if tt.blkid != "" {
				f.exec = exectest.New().On(exectest.OK(tt.blkid), "blkid", "-p", "-o", "export", dev)
				f.srv.exec = f.exec
			}
			_, err := f.srv.NodePublishVolume(t.Context(), publishReq(f.target("x"), mountCap(tt.requested), false))
			wantCode(t, err, codes.FailedPrecondition)
			t.Logf("refused: %v", err)
			if n := len(f.exec.Lines()); n != 1 {
				t.Errorf("ran %q, want only blkid", f.exec.Lines())
			}
			if mps, _ := f.mounter.List(); len(mps) != 0 {
				t.Errorf("mounted %+v", mps)
			}
		})
	}
}

// TestNodePublishUnreadableDeviceIsNotBlank: blkid exits 2 for "nothing found" and for "cannot read";
// when wipefs cannot open the device either, nothing is formatted.
func TestNodePublishUnreadableDeviceIsNotBlank(t *testing.T) {
	f := newFixture(t, "")
	f.exec = exectest.New().On(exectest.Fail(2, ""), "blkid", "-p", "-o", "export", dev).
		On(exectest.Fail(1, "wipefs: error: "+dev+": probing initialization failed: Input/output error"),
			"wipefs", "--no-act", "--json", dev)
	f.srv.exec = f.exec
	_, err := f.srv.NodePublishVolume(t.Context(), publishReq(f.target("u"), mountCap("ext4"), false))
	if err == nil {
		t.Fatal("published a volume whose device could not be probed")
	}
	t.Logf("refused: %v", err)
	for _, l := range f.exec.Lines() {
		if !probeLine(l) {
			t.Errorf("ran %q after a failed probe", l)
		}
	}
}

func TestNodePublishBtrfsWithoutMkfsBtrfs(t *testing.T) {
	f := newFixture(t, "")
	f.exec.On(exectest.Fail(127, "nsenter: failed to execute mkfs.btrfs: No such file or directory"), "mkfs.btrfs", dev)
	_, err := f.srv.NodePublishVolume(t.Context(), publishReq(f.target("b"), mountCap("btrfs"), false))
	wantCode(t, err, codes.FailedPrecondition)
}

func TestNodePublishBlock(t *testing.T) {
	for _, readonly := range []bool{false, true} {
		f := newFixture(t, "")
		target := f.target("dev")
		for range 2 {
			if _, err := f.srv.NodePublishVolume(t.Context(), publishReq(target, blockCap(), readonly)); err != nil {
				t.Fatalf("NodePublishVolume: %v", err)
			}
		}
		if len(f.exec.Lines()) != 0 {
			t.Errorf("block publish ran %q", f.exec.Lines())
		}
		want := []string{"bind"}
		if readonly {
			want = append(want, "ro")
		}
		mps, _ := f.mounter.List()
		if len(mps) != 1 || mps[0].Device != dev || mps[0].Path != target || !slices.Equal(mps[0].Opts, want) {
			t.Errorf("readonly=%v: mounts %+v, want %s bind-mounted on %s with %q", readonly, mps, dev, target, want)
		}
		if !fileExists(t, target) {
			t.Errorf("target file %s not created", target)
		}
	}
}

func TestNodePublishInvalidRequests(t *testing.T) {
	multi := mountCap("ext4")
	multi.AccessMode.Mode = csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	tests := []struct {
		name string
		req  func(target string) *csi.NodePublishVolumeRequest
		want codes.Code
	}{
		{"no volume ID", func(tg string) *csi.NodePublishVolumeRequest {
			r := publishReq(tg, mountCap("ext4"), false)
			r.VolumeId = ""
			return r
		}, codes.InvalidArgument},
		{
			"no target",
			func(string) *csi.NodePublishVolumeRequest { return publishReq("", mountCap("ext4"), false) },
			codes.InvalidArgument,
		},
		{
			"no capability",
			func(tg string) *csi.NodePublishVolumeRequest { return publishReq(tg, nil, false) },
			codes.InvalidArgument,
		},
		{
			"multi-node access",
			func(tg string) *csi.NodePublishVolumeRequest { return publishReq(tg, multi, false) },
			codes.InvalidArgument,
		},
		{
			"unsupported filesystem",
			func(tg string) *csi.NodePublishVolumeRequest { return publishReq(tg, mountCap("vfat"), false) },
			codes.InvalidArgument,
		},
		{"unknown volume", func(tg string) *csi.NodePublishVolumeRequest {
			r := publishReq(tg, mountCap("ext4"), false)
			r.VolumeId = "vol-unknown"
			return r
		}, codes.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "")
			_, err := f.srv.NodePublishVolume(t.Context(), tt.req(f.target("x")))
			wantCode(t, err, tt.want)
			if mps, _ := f.mounter.List(); len(mps) != 0 {
				t.Errorf("mounted %+v", mps)
			}
		})
	}
}

func TestNodeUnpublish(t *testing.T) {
	tests := []struct {
		name    string
		capab   *csi.VolumeCapability
		publish bool
	}{
		{"filesystem", mountCap("ext4"), true},
		{"block", blockCap(), true},
		{"never published", mountCap("ext4"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "ext4")
			target := f.target("u")
			if tt.publish {
				if _, err := f.srv.NodePublishVolume(t.Context(), publishReq(target, tt.capab, false)); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 { // idempotent
				if _, err := f.srv.NodeUnpublishVolume(
					t.Context(),
					&csi.NodeUnpublishVolumeRequest{VolumeId: volID, TargetPath: target},
				); err != nil {
					t.Fatalf("NodeUnpublishVolume: %v", err)
				}
			}
			if mps, _ := f.mounter.List(); len(mps) != 0 {
				t.Errorf("still mounted: %+v", mps)
			}
			if fileExists(t, target) {
				t.Errorf("target %s not removed", target)
			}
			unmounts := 0
			for _, a := range f.mounter.GetLog() {
				if a.Action == mount.FakeActionUnmount {
					unmounts++
				}
			}
			if tt.publish && unmounts != 1 {
				t.Errorf("%d unmounts, want 1", unmounts)
			}
		})
	}
	f := newFixture(t, "")
	_, err := f.srv.NodeUnpublishVolume(t.Context(), &csi.NodeUnpublishVolumeRequest{VolumeId: volID})
	wantCode(t, err, codes.InvalidArgument)
}

func TestNodePublishSingleWriterRefusesASecondTarget(t *testing.T) {
	for _, capab := range []*csi.VolumeCapability{mountCap("ext4"), blockCap()} {
		f := newFixture(t, "ext4")
		capab.AccessMode.Mode = csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		first, second := f.target("one"), f.target("two")
		for _, target := range []string{first, first} { // a repeat on the same target is fine
			if _, err := f.srv.NodePublishVolume(t.Context(), publishReq(target, capab, false)); err != nil {
				t.Fatalf("publish at %s: %v", target, err)
			}
		}
		_, err := f.srv.NodePublishVolume(t.Context(), publishReq(second, capab, false))
		wantCode(t, err, codes.FailedPrecondition)

		capab.AccessMode.Mode = csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
		if _, err := f.srv.NodePublishVolume(t.Context(), publishReq(second, capab, false)); err != nil {
			t.Errorf("SINGLE_NODE_WRITER allows two targets on one node: %v", err)
		}
	}
}

// TestSingleWriterFindsBlockBindMounts: a real bind mount of a device node is listed with the device
// filesystem as its source (not the LV's path); the check must still see the device behind it. A symlink
// to a host block device stands in for the mounted file (stat follows it to the device node).
func TestSingleWriterFindsBlockBindMounts(t *testing.T) {
	const blockDev = "/dev/loop0"
	if _, ok := blockDevice(blockDev); !ok {
		t.Skipf("%s is not a block device here", blockDev)
	}
	dir := t.TempDir()
	other := filepath.Join(dir, "other-pod", "target")
	if err := os.MkdirAll(filepath.Dir(other), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(blockDev, other); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		mp      mount.MountPoint
		refused bool
	}{
		{"bind mount of the device", mount.MountPoint{Device: "udev", Path: other, Type: "devtmpfs"}, true},
		{"tmpfs /dev (containers)", mount.MountPoint{Device: "tmpfs", Path: other, Type: "tmpfs"}, true},
		{"other filesystems are not stat'ed", mount.MountPoint{Device: "server:/x", Path: other, Type: "nfs"}, false},
		{
			"the target itself",
			mount.MountPoint{Device: "udev", Path: filepath.Join(dir, "me"), Type: "devtmpfs"},
			false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &Server{mounter: mount.NewFakeMounter([]mount.MountPoint{tt.mp})}
			err := srv.checkSingleWriter(blockDev, filepath.Join(dir, "me"))
			if got := err != nil; got != tt.refused {
				t.Errorf("checkSingleWriter with %+v: %v, want refused %v", tt.mp, err, tt.refused)
			}
		})
	}
}

// recordingLimiter records the publishes it capped and fails with err.
type recordingLimiter struct {
	calls []string // volume ID + " " + target
	err   error
}

func (r *recordingLimiter) LimitPublished(_ context.Context, id, target string) error {
	r.calls = append(r.calls, id+" "+target)
	return r.err
}

// TestNodePublishCapsThePod: every publish, block or filesystem, asks the limiter to cap the pod
// after the mount; a failure fails the publish and leaves the mount, so the kubelet's retry caps
// again.
func TestNodePublishCapsThePod(t *testing.T) {
	for _, c := range []*csi.VolumeCapability{blockCap(), mountCap("ext4")} {
		f := newFixture(t, "ext4")
		lim := &recordingLimiter{err: errors.New("no io.max")}
		f.srv.limiter = lim
		target := f.target("t")
		_, err := f.srv.NodePublishVolume(t.Context(), publishReq(target, c, false))
		wantCode(t, err, codes.Internal)
		if mps, _ := f.mounter.List(); len(mps) != 1 {
			t.Errorf("mounts after a failed cap: %+v, want the publish's", mps)
		}
		lim.err = nil
		if _, err := f.srv.NodePublishVolume(t.Context(), publishReq(target, c, false)); err != nil {
			t.Fatalf("NodePublishVolume: %v", err)
		}
		want := []string{volID + " " + target, volID + " " + target}
		if !slices.Equal(lim.calls, want) {
			t.Errorf("limiter calls %q, want %q", lim.calls, want)
		}
	}
}
