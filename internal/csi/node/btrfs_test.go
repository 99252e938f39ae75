package node

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

// The fixture's blkid reports UUID=1234 for a formatted device.
const fsid = "1234"

func TestNodePublishBtrfsCopyGetsItsOwnFSID(t *testing.T) {
	tests := []struct {
		name string
		// mountedFrom lists the devices /sys/fs/btrfs/<fsid>/devices holds; nil = fsid not mounted.
		mountedFrom []string
		wantTune    bool
	}{
		{"fsid not mounted", nil, false},
		{"fsid mounted from another device (the origin)", []string{"dm-7"}, true},
		{"the device itself mounted at another target", []string{filepath.Base(dev)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "btrfs")
			f.srv.btrfsSysDir = btrfsSysDir(t, tt.mountedFrom)
			f.exec.On(exectest.OK(""), "btrfstune", "-m", dev)
			target := f.target("copy")
			if _, err := f.srv.NodePublishVolume(
				t.Context(),
				publishReq(target, mountCap("btrfs"), false),
			); err != nil {
				t.Fatalf("NodePublishVolume: %v", err)
			}
			if got := f.exec.Count("btrfstune"); got != map[bool]int{true: 1, false: 0}[tt.wantTune] {
				t.Errorf("btrfstune ran %d times (%q), want it: %v", got, f.exec.Lines(), tt.wantTune)
			}
			if f.exec.Count("mkfs.btrfs") != 0 {
				t.Errorf("a formatted btrfs was formatted again: %q", f.exec.Lines())
			}
			if mps, _ := f.mounter.List(); len(mps) != 1 || mps[0].Path != target || mps[0].Type != "btrfs" {
				t.Errorf("mounts %+v, want btrfs at %s", mps, target)
			}
		})
	}
}

func TestNodePublishBtrfsCopyFailures(t *testing.T) {
	tests := []struct {
		name string
		resp exectest.Response
		want codes.Code
	}{
		{
			"btrfstune not installed",
			exectest.Fail(127, "nsenter: failed to execute btrfstune: No such file or directory"),
			codes.FailedPrecondition,
		},
		{"btrfstune fails", exectest.Fail(1, "ERROR: cannot open device"), codes.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "btrfs")
			f.srv.btrfsSysDir = btrfsSysDir(t, []string{"dm-7"})
			f.exec.On(tt.resp, "btrfstune", "-m", dev)
			_, err := f.srv.NodePublishVolume(t.Context(), publishReq(f.target("copy"), mountCap("btrfs"), false))
			wantCode(t, err, tt.want)
			if mps, _ := f.mounter.List(); len(mps) != 0 {
				t.Errorf("mounted %+v although the fsid clashes", mps)
			}
		})
	}
}

// btrfsSysDir builds a /sys/fs/btrfs where fsid is mounted from devs (not mounted when devs is nil).
func btrfsSysDir(t *testing.T, devs []string) string {
	t.Helper()
	dir := t.TempDir()
	if devs == nil {
		return dir
	}
	for _, d := range devs {
		if err := os.MkdirAll(filepath.Join(dir, fsid, "devices", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
