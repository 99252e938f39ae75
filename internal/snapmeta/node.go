package snapmeta

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
)

// DefaultMaxResults is the number of ranges per message when a request leaves max_results at 0.
const DefaultMaxResults = 256

// Finder finds the LV of a snapshot ID (the LV name) in the device classes of this node; found is
// false when no class has it.
type Finder interface {
	FindLV(ctx context.Context, id string) (lv lvmd.LV, found bool, err error)
}

// Reader reads thin pool metadata; *thinmeta.Reader implements it.
type Reader interface {
	Lookup(ctx context.Context, vg string, names ...string) ([]thinmeta.Thin, error)
	Delta(ctx context.Context, base, target thinmeta.Thin, fn func(thinmeta.Range) error) error
	Allocated(ctx context.Context, lv thinmeta.Thin, fn func(thinmeta.Range) error) error
}

// Node is the SnapshotMetadata service of one node: it answers for snapshots whose LVs are on it.
type Node struct {
	csi.UnimplementedSnapshotMetadataServer
	lvs  Finder
	meta Reader
}

// NewNode returns the service over the node's LVs and thin metadata.
func NewNode(lvs Finder, meta Reader) *Node { return &Node{lvs: lvs, meta: meta} }

// GetMetadataAllocated streams the ranges snapshot snapshot_id maps, from starting_offset on.
func (n *Node) GetMetadataAllocated(
	req *csi.GetMetadataAllocatedRequest,
	stream csi.SnapshotMetadata_GetMetadataAllocatedServer,
) error {
	ctx := stream.Context()
	if req.GetSnapshotId() == "" {
		return status.Error(codes.InvalidArgument, "snapshot_id is required")
	}
	thins, err := n.thins(ctx, req.GetStartingOffset(), req.GetMaxResults(), req.GetSnapshotId())
	if err != nil {
		return err
	}
	t := thins[0]
	b := batcher(req.GetMaxResults(), func(blocks []*csi.BlockMetadata) error {
		return stream.Send(&csi.GetMetadataAllocatedResponse{
			BlockMetadataType: csi.BlockMetadataType_VARIABLE_LENGTH, VolumeCapacityBytes: int64(t.Size),
			BlockMetadata: blocks,
		})
	})
	err = n.meta.Allocated(ctx, t, thinmeta.StartingAt(uint64(req.GetStartingOffset()), t.ChunkSize, b.Add))
	if err == nil {
		err = b.Flush()
	}
	return rpcError(err)
}

// GetMetadataDelta streams the ranges that differ between base_snapshot_id and target_snapshot_id
// (snapshots of one volume), from starting_offset on.
func (n *Node) GetMetadataDelta(
	req *csi.GetMetadataDeltaRequest,
	stream csi.SnapshotMetadata_GetMetadataDeltaServer,
) error {
	ctx := stream.Context()
	if req.GetBaseSnapshotId() == "" || req.GetTargetSnapshotId() == "" {
		return status.Error(codes.InvalidArgument, "base_snapshot_id and target_snapshot_id are required")
	}
	thins, err := n.thins(ctx, req.GetStartingOffset(), req.GetMaxResults(),
		req.GetBaseSnapshotId(), req.GetTargetSnapshotId())
	if err != nil {
		return err
	}
	base, target := thins[0], thins[1]
	b := batcher(req.GetMaxResults(), func(blocks []*csi.BlockMetadata) error {
		return stream.Send(&csi.GetMetadataDeltaResponse{
			BlockMetadataType: csi.BlockMetadataType_VARIABLE_LENGTH, VolumeCapacityBytes: int64(target.Size),
			BlockMetadata: blocks,
		})
	})
	err = n.meta.Delta(ctx, base, target, thinmeta.StartingAt(uint64(req.GetStartingOffset()), target.ChunkSize, b.Add))
	if err == nil {
		err = b.Flush()
	}
	return rpcError(err)
}

// thins checks the paging arguments and looks up the thin volumes of the snapshot IDs, which must be
// on this node, in thin device classes and in one volume group; offset must not exceed the capacity of
// the last (CSI: OUT_OF_RANGE).
func (n *Node) thins(ctx context.Context, offset int64, maxResults int32, ids ...string) ([]thinmeta.Thin, error) {
	if offset < 0 || maxResults < 0 {
		return nil, status.Errorf(codes.InvalidArgument,
			"starting_offset %d and max_results %d must not be negative", offset, maxResults)
	}
	vg := ""
	for _, id := range ids {
		lv, found, err := n.lvs.FindLV(ctx, id)
		switch {
		case err != nil:
			return nil, rpcError(fmt.Errorf("look up snapshot %s: %w", id, err))
		case !found:
			return nil, status.Errorf(codes.NotFound, "snapshot %s does not exist on this node", id)
		case lv.ThinPool == "":
			return nil, status.Errorf(
				codes.Unimplemented,
				"snapshot %s is in device class %s, which is not thin: changed block tracking needs a thin device class",
				id,
				lv.DeviceClass,
			)
		case vg != "" && lv.VolumeGroup != vg:
			return nil, status.Errorf(codes.InvalidArgument,
				"snapshots %v are in different volume groups: not snapshots of one volume", ids)
		}
		vg = lv.VolumeGroup
	}
	thins, err := n.meta.Lookup(ctx, vg, ids...)
	if err != nil {
		return nil, rpcError(err)
	}
	if size := thins[len(thins)-1].Size; uint64(offset) > size {
		return nil, status.Errorf(codes.OutOfRange, "starting_offset %d exceeds the volume's capacity %d",
			offset, size)
	}
	return thins, nil
}

// batcher groups ranges into messages of at most maxResults (DefaultMaxResults for 0) block
// metadata entries.
func batcher(maxResults int32, send func([]*csi.BlockMetadata) error) *thinmeta.Batcher {
	if maxResults == 0 {
		maxResults = DefaultMaxResults
	}
	return &thinmeta.Batcher{Max: int(maxResults), Send: func(rs []thinmeta.Range) error {
		blocks := make([]*csi.BlockMetadata, len(rs))
		for i, r := range rs {
			blocks[i] = &csi.BlockMetadata{ByteOffset: int64(r.Offset), SizeBytes: int64(r.Length)}
		}
		return send(blocks)
	}}
}
