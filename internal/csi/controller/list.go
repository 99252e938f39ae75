package controller

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/controller/transfertoken"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// A page token is tokenPrefix followed by the last ID of the page before: the next page starts after
// that ID in ID order, so a token stays valid when its volume is deleted, and what was added between
// two pages is listed when its ID sorts after the token's.
const tokenPrefix = "after:"

// ListVolumes lists the volumes (writable LogicalVolumes whose LV exists) in volume ID order, a page
// of max_entries at a time. (CSI 1.13 moved a volume's condition to the health RPCs: health.go.)
func (s *Server) ListVolumes(ctx context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	lvs, next, err := s.page(ctx, req.GetStartingToken(), req.GetMaxEntries(), func(lv *topolvmv1.LogicalVolume) bool {
		return lv.Spec.AccessType != topolvmv1.AccessTypeReadOnly
	})
	if err != nil {
		return nil, err
	}
	resp := &csi.ListVolumesResponse{NextToken: next}
	for _, lv := range lvs {
		resp.Entries = append(resp.Entries, &csi.ListVolumesResponse_Entry{Volume: csiVolume(lv)})
	}
	return resp, nil
}

// ControllerGetVolume returns one volume; NotFound when no volume has the ID.
func (s *Server) ControllerGetVolume(
	ctx context.Context,
	req *csi.ControllerGetVolumeRequest,
) (*csi.ControllerGetVolumeResponse, error) {
	lv, err := s.volumeByID(ctx, req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &csi.ControllerGetVolumeResponse{Volume: csiVolume(lv)}, nil
}

// volumeByID returns the writable LogicalVolume with volume ID id from the cache; InvalidArgument
// for an empty ID, NotFound when no volume has it.
func (s *Server) volumeByID(ctx context.Context, id string) (*topolvmv1.LogicalVolume, error) {
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID is required")
	}
	lv, err := s.getByVolumeID(ctx, id)
	if err != nil {
		return nil, rpcError(err)
	}
	if lv == nil || lv.Spec.AccessType == topolvmv1.AccessTypeReadOnly {
		return nil, status.Errorf(codes.NotFound, "volume %s not found", id)
	}
	return lv, nil
}

// ListSnapshots lists the snapshots (read-only LogicalVolumes the CSI driver made) in snapshot ID
// order, all of them or the one of snapshot_id or those of source_volume_id, a page at a time.
func (s *Server) ListSnapshots(
	ctx context.Context,
	req *csi.ListSnapshotsRequest,
) (*csi.ListSnapshotsResponse, error) {
	lvs, next, err := s.page(ctx, req.GetStartingToken(), req.GetMaxEntries(), func(lv *topolvmv1.LogicalVolume) bool {
		return isSnapshot(lv) && (req.GetSnapshotId() == "" || lv.Status.VolumeID == req.GetSnapshotId()) &&
			(req.GetSourceVolumeId() == "" || lv.Spec.Source == req.GetSourceVolumeId())
	})
	if err != nil {
		return nil, err
	}
	resp := &csi.ListSnapshotsResponse{NextToken: next}
	for _, lv := range lvs {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: csiSnapshot(lv)})
	}
	return resp, nil
}

// GetSnapshot returns one snapshot; NotFound when no snapshot has the ID.
func (s *Server) GetSnapshot(ctx context.Context, req *csi.GetSnapshotRequest) (*csi.GetSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot ID is required")
	}
	lv, err := s.getByVolumeID(ctx, id)
	if err != nil {
		return nil, rpcError(err)
	}
	if lv == nil || !isSnapshot(lv) {
		return nil, status.Errorf(codes.NotFound, "snapshot %s not found", id)
	}
	return &csi.GetSnapshotResponse{Snapshot: csiSnapshot(lv)}, nil
}

// page reads the LogicalVolumes with an LV that keep accepts from the cache, sorted by volume ID, and
// returns those after the token, at most max of them (all when max is 0), with the next page's token.
func (s *Server) page(ctx context.Context, token string, maxEntries int32,
	keep func(*topolvmv1.LogicalVolume) bool) ([]*topolvmv1.LogicalVolume, string, error) {
	after, ok := strings.CutPrefix(token, tokenPrefix)
	switch {
	case token != "" && (!ok || after == ""):
		return nil, "", status.Errorf(codes.Aborted, "starting token %q is not one this driver gave", token)
	case maxEntries < 0:
		return nil, "", status.Error(codes.InvalidArgument, "max_entries must not be negative")
	}
	var list topolvmv1.LogicalVolumeList
	if err := s.cache.List(ctx, &list); err != nil {
		return nil, "", status.Errorf(codes.Unavailable, "list LogicalVolumes: %v", err)
	}
	var lvs []*topolvmv1.LogicalVolume
	for i := range list.Items {
		lv := &list.Items[i]
		if lv.Status.VolumeID != "" && lv.DeletionTimestamp.IsZero() && lv.Status.VolumeID > after && keep(lv) {
			lvs = append(lvs, lv)
		}
	}
	slices.SortFunc(lvs, func(a, b *topolvmv1.LogicalVolume) int {
		return cmp.Compare(a.Status.VolumeID, b.Status.VolumeID)
	})
	if maxEntries == 0 || len(lvs) <= int(maxEntries) {
		return lvs, "", nil
	}
	lvs = lvs[:maxEntries]
	return lvs, tokenPrefix + lvs[len(lvs)-1].Status.VolumeID, nil
}

// isSnapshot tells a CSI snapshot from the other read-only LogicalVolumes: the images the operator
// makes as the source of a copy to another node (transfertoken.ImagePrefix).
func isSnapshot(lv *topolvmv1.LogicalVolume) bool {
	return lv.Spec.AccessType == topolvmv1.AccessTypeReadOnly && lv.Spec.Source != "" &&
		!strings.HasPrefix(lv.Name, transfertoken.ImagePrefix)
}

func csiVolume(lv *topolvmv1.LogicalVolume) *csi.Volume {
	return &csi.Volume{
		VolumeId:           lv.Status.VolumeID,
		CapacityBytes:      currentSize(lv),
		AccessibleTopology: []*csi.Topology{{Segments: map[string]string{driver.TopologyNodeKey: lv.Spec.NodeName}}},
	}
}

func csiSnapshot(lv *topolvmv1.LogicalVolume) *csi.Snapshot {
	return &csi.Snapshot{
		SnapshotId:     lv.Status.VolumeID,
		SourceVolumeId: lv.Spec.Source,
		SizeBytes:      lv.Spec.Size.Value(),
		CreationTime:   timestamppb.New(lv.CreationTimestamp.Time),
		ReadyToUse:     true,
	}
}
