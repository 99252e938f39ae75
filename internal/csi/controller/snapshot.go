package controller

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

// CreateSnapshot creates (or finds) a read-only snapshot of a volume: a LogicalVolume named by the CSI
// snapshot name, with the source's volume ID as spec.source, access type ro and the source's size, on
// the source's node and device class. It returns once the node has created it: a thin snapshot in a
// thin class, a copy-on-write snapshot in a thick class, whose store the node sizes for a rewrite of
// the whole source (so it never becomes invalid) and which fails with ResourceExhausted when the
// volume group cannot hold it. The snapshot's size (the CSI restore size) is the source's, not the
// copy-on-write store's.
func (s *Server) CreateSnapshot(
	ctx context.Context,
	req *csi.CreateSnapshotRequest,
) (*csi.CreateSnapshotResponse, error) {
	name, sourceID := req.GetName(), req.GetSourceVolumeId()
	if name == "" || sourceID == "" {
		return nil, status.Error(codes.InvalidArgument, "name and source volume ID are required")
	}
	release, err := s.locks.Lock(name)
	if err != nil {
		return nil, err
	}
	defer release()

	want, err := s.desiredSnapshot(ctx, name, sourceID)
	if err != nil {
		return nil, rpcError(err)
	}
	lv, err := s.ensure(ctx, want)
	if err != nil {
		return nil, rpcError(err)
	}
	return &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{
		SnapshotId:     lv.Status.VolumeID,
		SourceVolumeId: sourceID,
		SizeBytes:      lv.Spec.Size.Value(),
		CreationTime:   timestamppb.New(lv.CreationTimestamp.Time),
		ReadyToUse:     true,
	}}, nil
}

// desiredSnapshot is the LogicalVolume of a snapshot of the volume sourceID. Its size is the source's
// real size (status.currentSize, whole extents), not the requested one: a thick snapshot's
// copy-on-write store then covers a rewrite of every block of the source (lvmd adds the store's
// metadata), and a restore is at least as large as the source.
func (s *Server) desiredSnapshot(ctx context.Context, name, sourceID string) (*topolvmv1.LogicalVolume, error) {
	source, err := s.getByVolumeID(ctx, sourceID)
	if err != nil {
		return nil, err
	}
	if source == nil {
		return nil, fmt.Errorf("source volume %s: %w", sourceID, errNotFound)
	}
	return &topolvmv1.LogicalVolume{
		ObjectMeta: metav1.ObjectMeta{Name: objectName(name)},
		Spec: topolvmv1.LogicalVolumeSpec{
			Name:                name,
			NodeName:            source.Spec.NodeName,
			Size:                *resource.NewQuantity(currentSize(source), resource.BinarySI),
			DeviceClass:         source.Spec.DeviceClass,
			LvcreateOptionClass: source.Spec.LvcreateOptionClass,
			Source:              sourceID,
			AccessType:          topolvmv1.AccessTypeReadOnly,
		},
	}, nil
}

// DeleteSnapshot deletes the snapshot's LogicalVolume and waits until it is gone; unknown IDs succeed.
func (s *Server) DeleteSnapshot(
	ctx context.Context,
	req *csi.DeleteSnapshotRequest,
) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot ID is required")
	}
	release, err := s.locks.Lock(id)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := s.deleteByVolumeID(ctx, id); err != nil {
		return nil, rpcError(err)
	}
	return &csi.DeleteSnapshotResponse{}, nil
}
