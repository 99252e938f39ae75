package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	ctrl "sigs.k8s.io/controller-runtime"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
)

// NodeExpandVolume grows the filesystem mounted at the volume path to the size of the (already
// extended) LV. Block volumes need nothing, except for encrypted volumes (filesystem or block), whose
// open dm-crypt mapping is resized to the LV first (with the node-expand secret's passphrase if given).
func (s *Server) NodeExpandVolume(
	ctx context.Context,
	req *csi.NodeExpandVolumeRequest,
) (*csi.NodeExpandVolumeResponse, error) {
	id, path := req.GetVolumeId(), req.GetVolumePath()
	if id == "" || path == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and volume path are required")
	}
	release, err := s.locks.Lock(id)
	if err != nil {
		return nil, err
	}
	defer release()

	dev, size, err := s.volumes.Device(ctx, id)
	if err != nil {
		return nil, rpcError(fmt.Errorf("volume %s: %w", id, err))
	}
	// After the volume lookup: an unknown volume is NotFound whatever the path (csi-sanity).
	if err := confine(s.kubeletDir, path); err != nil {
		return nil, rpcError(err)
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.NotFound, "volume path %s does not exist", path)
	} else if err != nil {
		return nil, status.Errorf(codes.Internal, "stat %s: %v", path, err)
	}
	// An encrypted volume's dm-crypt mapping grows first; its filesystem lives on the mapping.
	if dev, err = s.resizeMapping(ctx, id, dev, req.GetSecrets()); err != nil {
		return nil, rpcError(fmt.Errorf("volume %s: %w", id, err))
	}
	if lvmcsi.IsBlock(req.GetVolumeCapability()) || !fi.IsDir() {
		return &csi.NodeExpandVolumeResponse{CapacityBytes: size}, nil
	}
	if err := s.expandFilesystem(ctx, dev, path); err != nil {
		return nil, rpcError(err)
	}
	ctrl.LoggerFrom(ctx).Info("Expanded filesystem", "volumeID", id, "path", path, "bytes", size)
	return &csi.NodeExpandVolumeResponse{CapacityBytes: size}, nil
}

func (s *Server) expandFilesystem(ctx context.Context, dev, path string) error {
	mounted, err := s.mounter.IsMountPoint(path)
	if err != nil {
		return fmt.Errorf("check mount point %s: %w", path, err)
	}
	if !mounted {
		return fmt.Errorf("volume path %s: %w", path, errNotMounted)
	}
	return s.resizeFilesystem(ctx, dev, path)
}

// NodeGetVolumeStats reports bytes and inodes of a filesystem volume (statfs) and bytes of a block
// volume (the LV size). A missing LV or an unmounted path is NotFound; NodeGetVolumeHealth explains.
func (s *Server) NodeGetVolumeStats(
	ctx context.Context,
	req *csi.NodeGetVolumeStatsRequest,
) (*csi.NodeGetVolumeStatsResponse, error) {
	id, path := req.GetVolumeId(), req.GetVolumePath()
	if id == "" || path == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and volume path are required")
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.NotFound, "volume path %s does not exist", path)
	} else if err != nil {
		return nil, status.Errorf(codes.Internal, "stat %s: %v", path, err)
	}
	_, size, err := s.volumes.Device(ctx, id)
	if err != nil {
		return nil, rpcError(fmt.Errorf("volume %s: %w", id, err))
	}
	mounted, err := s.mounter.IsMountPoint(path)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "check mount point %s: %v", path, err)
	}
	if !mounted {
		return nil, status.Errorf(codes.NotFound, "volume %s is not mounted at %s", id, path)
	}
	if !fi.IsDir() {
		return &csi.NodeGetVolumeStatsResponse{
			Usage: []*csi.VolumeUsage{{Unit: csi.VolumeUsage_BYTES, Total: size}},
		}, nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return nil, status.Errorf(codes.Internal, "statfs %s: %v", path, err)
	}
	bsize := st.Bsize
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{
			Unit:      csi.VolumeUsage_BYTES,
			Total:     int64(st.Blocks) * bsize,
			Available: int64(st.Bavail) * bsize,
			Used:      int64(st.Blocks-st.Bfree) * bsize,
		},
		{
			Unit:      csi.VolumeUsage_INODES,
			Total:     int64(st.Files),
			Available: int64(st.Ffree),
			Used:      int64(st.Files - st.Ffree),
		},
	}}, nil
}

// Reasons of adverse volume health.
const (
	ReasonLogicalVolumeMissing = "LogicalVolumeMissing"
	ReasonNotMounted           = "NotMounted"
)

// NodeGetVolumeHealth reports the volume INACCESSIBLE when its LV is missing on this node or its
// publish path is not mounted; an empty list means healthy. (CSI 1.13 replaced the VOLUME_CONDITION
// field of NodeGetVolumeStats with this RPC; kubelet 1.37 calls it when GET_VOLUME_HEALTH is set.)
func (s *Server) NodeGetVolumeHealth(
	ctx context.Context,
	req *csi.NodeGetVolumeHealthRequest,
) (*csi.NodeGetVolumeHealthResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID is required")
	}
	health := &csi.VolumeHealth{VolumeId: id}
	inaccessible := func(reason, msg string) {
		health.HealthStatuses = append(health.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{
			Status: csi.VolumeHealthErrorType_INACCESSIBLE, Reason: reason, Message: msg,
		})
	}
	_, _, err := s.volumes.Device(ctx, id)
	switch {
	case errors.Is(err, ErrVolumeNotFound):
		inaccessible(ReasonLogicalVolumeMissing, fmt.Sprintf("the logical volume is missing on node %s", s.nodeName))
	case err != nil:
		return nil, rpcError(fmt.Errorf("volume %s: %w", id, err))
	}
	if path := req.GetVolumePublishPath(); path != "" {
		mounted, err := s.mounter.IsMountPoint(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, status.Errorf(codes.Internal, "check mount point %s: %v", path, err)
		}
		if !mounted {
			inaccessible(ReasonNotMounted, fmt.Sprintf("not mounted at %s", path))
		}
	}
	return &csi.NodeGetVolumeHealthResponse{VolumeHealth: health}, nil
}
