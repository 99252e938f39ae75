package node

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// TestPathsOutsideKubeletDirAreRefused: publish, unpublish and expand refuse a path that is not below
// the kubelet's directory, as written or through a symbolic link, before they touch anything.
func TestPathsOutsideKubeletDirAreRefused(t *testing.T) {
	f := newFixture(t, "")
	outside := t.TempDir()
	link := filepath.Join(f.dir, "pods", "link")
	if err := os.MkdirAll(filepath.Dir(link), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{
		"outside":              filepath.Join(outside, "mount"),
		"host directory":       "/etc",
		"relative":             "pods/x/mount",
		"dot-dot":              f.dir + "/pods/../../escape",
		"the kubelet dir":      f.dir,
		"through a link":       filepath.Join(link, "mount"),
		"prefix but not below": f.dir + "-other/mount",
	}
	for name, p := range paths {
		t.Run(name, func(t *testing.T) {
			_, err := f.srv.NodePublishVolume(t.Context(), publishReq(p, mountCap("ext4"), false))
			wantCode(t, err, codes.InvalidArgument)
			t.Logf("publish: %v", err)
			_, err = f.srv.NodeUnpublishVolume(
				t.Context(),
				&csi.NodeUnpublishVolumeRequest{VolumeId: volID, TargetPath: p},
			)
			wantCode(t, err, codes.InvalidArgument)
			_, err = f.srv.NodeExpandVolume(t.Context(), &csi.NodeExpandVolumeRequest{VolumeId: volID, VolumePath: p})
			wantCode(t, err, codes.InvalidArgument)
		})
	}
	if l := f.exec.Lines(); len(l) != 0 {
		t.Errorf("ran %q", l)
	}
	if mps, _ := f.mounter.List(); len(mps) != 0 {
		t.Errorf("mounted %+v", mps)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("created %v outside the kubelet dir", entries)
	}
}
