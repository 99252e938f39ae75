package controller

import (
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// TestListVolumesPages: pages of two in volume ID order cover every volume once, a token stays
// valid after its volume is deleted, a foreign token is Aborted, snapshots are not volumes, and
// GetVolume finds a volume by ID.
func TestListVolumesPages(t *testing.T) {
	var made []string
	for range 5 {
		made = append(made, mustCreate(t, createReq(uniqueName("list"))).GetVolumeId())
	}
	snap, err := srv.CreateSnapshot(testCtx(t), &csi.CreateSnapshotRequest{Name: uniqueName("snap"),
		SourceVolumeId: made[0]})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	deleted, token := "", ""
	for pages := 0; ; pages++ {
		resp, err := srv.ListVolumes(testCtx(t), &csi.ListVolumesRequest{MaxEntries: 2, StartingToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(resp.GetEntries()); n > 2 || (n < 2 && resp.GetNextToken() != "") {
			t.Fatalf("page of %d entries, next token %q", n, resp.GetNextToken())
		}
		for _, e := range resp.GetEntries() {
			seen = append(seen, e.GetVolume().GetVolumeId())
			top := e.GetVolume().GetAccessibleTopology()
			if len(top) != 1 || top[0].GetSegments()[driver.TopologyNodeKey] == "" {
				t.Errorf("volume %s topology %v", e.GetVolume().GetVolumeId(), top)
			}
		}
		if token = resp.GetNextToken(); token == "" {
			break
		}
		if pages == 0 { // the last volume of the first page goes: its token still works
			deleted = seen[len(seen)-1]
			if _, err := srv.DeleteVolume(testCtx(t), &csi.DeleteVolumeRequest{VolumeId: deleted}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.IsSorted(seen) || len(slices.Compact(slices.Clone(seen))) != len(seen) {
		t.Errorf("listed %v: not in order, or twice", seen)
	}
	for _, id := range made {
		if !slices.Contains(seen, id) {
			t.Errorf("volume %s not listed", id)
		}
	}
	if slices.Contains(seen, snap.GetSnapshot().GetSnapshotId()) {
		t.Error("a snapshot is listed as a volume")
	}
	_, err = srv.ListVolumes(testCtx(t), &csi.ListVolumesRequest{StartingToken: "invalid-token"})
	wantCode(t, err, codes.Aborted)
	kept := made[0]
	if kept == deleted {
		kept = made[1]
	}
	got, err := srv.ControllerGetVolume(testCtx(t), &csi.ControllerGetVolumeRequest{VolumeId: kept})
	if err != nil || got.GetVolume().GetVolumeId() != kept {
		t.Errorf("ControllerGetVolume: %v, %v", got, err)
	}
	for _, id := range []string{"no-such-volume", deleted, snap.GetSnapshot().GetSnapshotId()} {
		_, err = srv.ControllerGetVolume(testCtx(t), &csi.ControllerGetVolumeRequest{VolumeId: id})
		wantCode(t, err, codes.NotFound)
	}
}

// TestListSnapshotsFilters: by snapshot ID and by source volume ID, with empty answers for unknown
// IDs; GetSnapshot finds one, and NotFound for an unknown ID or a volume's.
func TestListSnapshotsFilters(t *testing.T) {
	src := mustCreate(t, createReq(uniqueName("snapsrc"))).GetVolumeId()
	var snaps []string
	for range 2 {
		s, err := srv.CreateSnapshot(testCtx(t), &csi.CreateSnapshotRequest{Name: uniqueName("snap"),
			SourceVolumeId: src})
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s.GetSnapshot().GetSnapshotId())
	}
	ids := func(req *csi.ListSnapshotsRequest) []string {
		t.Helper()
		resp, err := srv.ListSnapshots(testCtx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range resp.GetEntries() {
			if e.GetSnapshot().GetSourceVolumeId() == "" || e.GetSnapshot().GetCreationTime() == nil {
				t.Errorf("snapshot %v lacks a field", e.GetSnapshot())
			}
			out = append(out, e.GetSnapshot().GetSnapshotId())
		}
		return out
	}
	got := ids(&csi.ListSnapshotsRequest{SourceVolumeId: src})
	if !slices.Equal(got, slices.Sorted(slices.Values(snaps))) {
		t.Errorf("snapshots of %s: %v, want %v", src, got, snaps)
	}
	if got := ids(&csi.ListSnapshotsRequest{SnapshotId: snaps[1]}); !slices.Equal(got, snaps[1:]) {
		t.Errorf("snapshot %s: %v", snaps[1], got)
	}
	for _, req := range []*csi.ListSnapshotsRequest{{SnapshotId: "none"}, {SourceVolumeId: "none"}} {
		if got := ids(req); len(got) != 0 {
			t.Errorf("%v: %v, want none", req, got)
		}
	}
	if got := ids(&csi.ListSnapshotsRequest{}); slices.Contains(got, src) {
		t.Error("a volume is listed as a snapshot")
	}
	snap, err := srv.GetSnapshot(testCtx(t), &csi.GetSnapshotRequest{SnapshotId: snaps[0]})
	if err != nil || snap.GetSnapshot().GetSourceVolumeId() != src {
		t.Errorf("GetSnapshot: %v, %v", snap, err)
	}
	for _, id := range []string{"none", src} {
		_, err = srv.GetSnapshot(testCtx(t), &csi.GetSnapshotRequest{SnapshotId: id})
		wantCode(t, err, codes.NotFound)
	}
}
