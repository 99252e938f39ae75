package node

import (
	"os"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

func TestNodeExpandVolume(t *testing.T) {
	tests := []struct {
		name     string
		fsType   string
		capab    *csi.VolumeCapability
		wantCmds func(target string) []string
	}{
		{"ext4", "ext4", mountCap("ext4"), func(string) []string { return []string{"resize2fs " + dev} }},
		{"xfs grows through the mount point", "xfs", mountCap("xfs"),
			func(tg string) []string { return []string{"xfs_growfs " + tg} }},
		{"btrfs", "btrfs", mountCap("btrfs"),
			func(tg string) []string { return []string{"btrfs filesystem resize max " + tg} }},
		{"block needs nothing", "", blockCap(), func(string) []string { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.fsType)
			target := f.target("e")
			f.exec.On(exectest.OK(""), "resize2fs", dev).On(exectest.OK(""), "xfs_growfs", target).
				On(exectest.OK(""), "btrfs", "filesystem", "resize", "max", target).
				On(exectest.OK(""), "mkfs.ext4", dev)
			if _, err := f.srv.NodePublishVolume(t.Context(), publishReq(target, tt.capab, false)); err != nil {
				t.Fatal(err)
			}
			f.exec.Reset()
			resp, err := f.srv.NodeExpandVolume(t.Context(), &csi.NodeExpandVolumeRequest{
				VolumeId: volID, VolumePath: target, VolumeCapability: tt.capab,
			})
			if err != nil || resp.GetCapacityBytes() != volSize {
				t.Fatalf("NodeExpandVolume: %v, %v", resp, err)
			}
			var got []string
			for _, l := range f.exec.Lines() {
				if !probeLine(l) {
					got = append(got, l)
				}
			}
			if want := tt.wantCmds(target); !slices.Equal(got, want) {
				t.Errorf("commands %q, want %q", got, want)
			}
		})
	}
}

func TestNodeExpandVolumeErrors(t *testing.T) {
	f := newFixture(t, "ext4")
	unmounted := f.target("unmounted")
	if err := os.MkdirAll(unmounted, 0o750); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  *csi.NodeExpandVolumeRequest
		want codes.Code
	}{
		{"no volume ID", &csi.NodeExpandVolumeRequest{VolumePath: unmounted}, codes.InvalidArgument},
		{"no path", &csi.NodeExpandVolumeRequest{VolumeId: volID}, codes.InvalidArgument},
		{"unknown volume", &csi.NodeExpandVolumeRequest{VolumeId: "nope", VolumePath: unmounted}, codes.NotFound},
		{"missing path", &csi.NodeExpandVolumeRequest{VolumeId: volID, VolumePath: f.target("gone")}, codes.NotFound},
		{"not mounted", &csi.NodeExpandVolumeRequest{VolumeId: volID, VolumePath: unmounted}, codes.FailedPrecondition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.srv.NodeExpandVolume(t.Context(), tt.req)
			wantCode(t, err, tt.want)
		})
	}
}

func TestNodeGetVolumeStats(t *testing.T) {
	f := newFixture(t, "ext4")
	fsTarget, blockTarget := f.target("fs"), f.target("blk")
	for target, c := range map[string]*csi.VolumeCapability{fsTarget: mountCap("ext4"), blockTarget: blockCap()} {
		if _, err := f.srv.NodePublishVolume(t.Context(), publishReq(target, c, false)); err != nil {
			t.Fatal(err)
		}
	}
	unmounted := f.target("unmounted")
	if err := os.MkdirAll(unmounted, 0o750); err != nil {
		t.Fatal(err)
	}

	resp, err := f.srv.NodeGetVolumeStats(
		t.Context(),
		&csi.NodeGetVolumeStatsRequest{VolumeId: volID, VolumePath: fsTarget},
	)
	if err != nil {
		t.Fatal(err)
	}
	var bytes, inodes *csi.VolumeUsage
	for _, u := range resp.GetUsage() {
		switch u.GetUnit() {
		case csi.VolumeUsage_BYTES:
			bytes = u
		case csi.VolumeUsage_INODES:
			inodes = u
		}
	}
	if bytes.GetTotal() <= 0 || bytes.GetAvailable() > bytes.GetTotal() || inodes.GetTotal() <= 0 {
		t.Errorf("filesystem usage bytes %v inodes %v", bytes, inodes)
	}

	resp, err = f.srv.NodeGetVolumeStats(
		t.Context(),
		&csi.NodeGetVolumeStatsRequest{VolumeId: volID, VolumePath: blockTarget},
	)
	if err != nil || len(resp.GetUsage()) != 1 || resp.GetUsage()[0].GetTotal() != volSize {
		t.Errorf("block stats %v, %v; want total %d bytes", resp, err, volSize)
	}

	tests := []struct {
		name string
		req  *csi.NodeGetVolumeStatsRequest
		want codes.Code
	}{
		{"no path", &csi.NodeGetVolumeStatsRequest{VolumeId: volID}, codes.InvalidArgument},
		{"missing path", &csi.NodeGetVolumeStatsRequest{VolumeId: volID, VolumePath: f.target("gone")}, codes.NotFound},
		{"missing LV", &csi.NodeGetVolumeStatsRequest{VolumeId: "nope", VolumePath: fsTarget}, codes.NotFound},
		{"not mounted", &csi.NodeGetVolumeStatsRequest{VolumeId: volID, VolumePath: unmounted}, codes.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.srv.NodeGetVolumeStats(t.Context(), tt.req)
			wantCode(t, err, tt.want)
		})
	}
}

func TestNodeGetVolumeHealth(t *testing.T) {
	f := newFixture(t, "ext4")
	target := f.target("h")
	if _, err := f.srv.NodePublishVolume(t.Context(), publishReq(target, mountCap("ext4"), false)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		id, path    string
		wantReasons []string
	}{
		{"healthy", volID, target, nil},
		{"healthy without path", volID, "", nil},
		{"LV missing", "nope", target, []string{ReasonLogicalVolumeMissing}},
		{"not mounted", volID, f.target("never"), []string{ReasonNotMounted}},
		{"both", "nope", f.target("never"), []string{ReasonLogicalVolumeMissing, ReasonNotMounted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := f.srv.NodeGetVolumeHealth(
				t.Context(),
				&csi.NodeGetVolumeHealthRequest{VolumeId: tt.id, VolumePublishPath: tt.path},
			)
			if err != nil {
				t.Fatal(err)
			}
			var reasons []string
			for _, h := range resp.GetVolumeHealth().GetHealthStatuses() {
				if h.GetStatus() != csi.VolumeHealthErrorType_INACCESSIBLE {
					t.Errorf("status %s", h.GetStatus())
				}
				reasons = append(reasons, h.GetReason())
			}
			if !slices.Equal(reasons, tt.wantReasons) {
				t.Errorf("reasons %q, want %q", reasons, tt.wantReasons)
			}
		})
	}
	_, err := f.srv.NodeGetVolumeHealth(t.Context(), &csi.NodeGetVolumeHealthRequest{})
	wantCode(t, err, codes.InvalidArgument)
}
