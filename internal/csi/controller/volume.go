package controller

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
)

// DeleteVolume deletes the LogicalVolume of a volume ID and waits until it is gone (the node removes its
// finalizer after lvremove). An unknown volume ID is a success.
func (s *Server) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID is required")
	}
	release, err := s.locks.Lock(id)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := s.deleteByVolumeID(ctx, id); err != nil {
		return nil, rpcError(err)
	}
	return &csi.DeleteVolumeResponse{}, nil
}

// deleteByVolumeID deletes the LogicalVolume carrying volume ID id, if any, and waits until it is gone.
func (s *Server) deleteByVolumeID(ctx context.Context, id string) error {
	lv, err := s.getByVolumeID(ctx, id)
	if err == nil && lv == nil {
		// The cache may lag behind the API server: only the API server may say the volume is gone.
		lv, err = s.readByVolumeID(ctx, id)
	}
	if err != nil || lv == nil {
		return err
	}
	if lv.DeletionTimestamp == nil {
		err := s.client.Delete(ctx, lv, client.Preconditions{UID: &lv.UID})
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete LogicalVolume %s: %w", lv.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Deleted LogicalVolume", "logicalVolume", lv.Name, "volumeID", id)
	}
	uid := lv.UID
	_, err = s.waitFor(ctx, lv.Name, "deleted", func(cur *topolvmv1.LogicalVolume) (bool, error) {
		return cur == nil || cur.UID != uid, nil
	})
	return err
}

// ControllerExpandVolume raises spec.size of the LogicalVolume and waits until the node reports a
// current size at least as large. Filesystem volumes and encrypted volumes then need NodeExpandVolume.
func (s *Server) ControllerExpandVolume(
	ctx context.Context,
	req *csi.ControllerExpandVolumeRequest,
) (*csi.ControllerExpandVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID is required")
	}
	if req.GetCapacityRange() == nil {
		return nil, status.Error(codes.InvalidArgument, "capacity range is required")
	}
	if c := req.GetVolumeCapability(); c != nil {
		if err := lvmcsi.ValidateCapability(c); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	release, err := s.locks.Lock(id)
	if err != nil {
		return nil, err
	}
	defer release()

	size, err := lvmcsi.RequestedSize(req.GetCapacityRange(), 0)
	if err != nil {
		return nil, rpcError(err)
	}
	lv, err := s.expand(ctx, id, size)
	if err != nil {
		return nil, rpcError(err)
	}
	// An encrypted block volume still needs the node: its dm-crypt mapping keeps its size until
	// `cryptsetup resize`.
	return &csi.ControllerExpandVolumeResponse{
		CapacityBytes:         currentSize(lv),
		NodeExpansionRequired: !lvmcsi.IsBlock(req.GetVolumeCapability()) || encryptionOf(lv) != "",
	}, nil
}

// expand patches spec.size of the volume to size unless it is already that large, then waits for the
// node's status.currentSize to reach it.
func (s *Server) expand(ctx context.Context, id string, size int64) (*topolvmv1.LogicalVolume, error) {
	lv, err := s.getByVolumeID(ctx, id)
	if err != nil {
		return nil, err
	}
	if lv == nil {
		return nil, fmt.Errorf("volume %s: %w", id, errNotFound)
	}
	if lv.Spec.AccessType == topolvmv1.AccessTypeReadOnly {
		return nil, fmt.Errorf("%w: %s is a snapshot; snapshots cannot be expanded", errInvalid, id)
	}
	want := resource.NewQuantity(size, resource.BinarySI)
	if lv.Spec.Size.Cmp(*want) < 0 {
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"size": want.String()}})
		if err != nil {
			return nil, fmt.Errorf("encode size patch: %w", err)
		}
		if err := s.client.Patch(
			ctx,
			lv,
			client.RawPatch(types.MergePatchType, patch),
			client.FieldOwner(FieldOwner),
		); err != nil {
			return nil, fmt.Errorf("patch size of LogicalVolume %s: %w", lv.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Expanding LogicalVolume", "logicalVolume", lv.Name, "size", want.String())
	}
	return s.waitFor(ctx, lv.Name, "resized", func(cur *topolvmv1.LogicalVolume) (bool, error) {
		switch {
		case cur == nil:
			return false, fmt.Errorf("volume %s was deleted during expansion: %w", id, errNotFound)
		case cur.Status.CurrentSize != nil && cur.Status.CurrentSize.Cmp(*want) >= 0:
			return true, nil
		default:
			err := nodeFailure(cur)
			return err != nil, err
		}
	})
}

// ValidateVolumeCapabilities confirms the capabilities the driver supports for an existing volume.
func (s *Server) ValidateVolumeCapabilities(
	ctx context.Context,
	req *csi.ValidateVolumeCapabilitiesRequest,
) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID is required")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	lv, err := s.getByVolumeID(ctx, id)
	if err != nil {
		return nil, rpcError(err)
	}
	if lv == nil {
		return nil, status.Errorf(codes.NotFound, "volume %s not found", id)
	}
	if err := lvmcsi.ValidateCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}
