package node

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	ctrl "sigs.k8s.io/controller-runtime"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
)

// NodeStageVolume prepares a volume on the node before its first publish. A plain volume needs nothing
// (NodePublishVolume mounts the LV itself); an encrypted one (volume context topolvm.io/encryption:
// luks2) gets its LUKS2 container, formatted on a blank LV, opened as a dm-crypt mapping with the
// passphrase of the node-stage secret. The staging path is not used.
func (s *Server) NodeStageVolume(
	ctx context.Context,
	req *csi.NodeStageVolumeRequest,
) (*csi.NodeStageVolumeResponse, error) {
	id, staging, c := req.GetVolumeId(), req.GetStagingTargetPath(), req.GetVolumeCapability()
	encryption, err := s.checkVolumeRequest(id, "staging target path", staging, c, req.GetVolumeContext())
	if err != nil {
		return nil, err
	}
	release, err := s.locks.Lock(id)
	if err != nil {
		return nil, err
	}
	defer release()

	dev, _, err := s.volumes.Device(ctx, id)
	if err != nil {
		return nil, rpcError(fmt.Errorf("volume %s: %w", id, err))
	}
	if encryption == "" {
		return &csi.NodeStageVolumeResponse{}, nil
	}
	key := req.GetSecrets()[lvmcsi.SecretKeyPassphrase]
	if key == "" {
		return nil, rpcError(fmt.Errorf("volume %s is encrypted: %w: the node-stage secret has no key %q "+
			"(StorageClass parameters csi.storage.k8s.io/node-stage-secret-name and -namespace)",
			id, errMissingKey, lvmcsi.SecretKeyPassphrase))
	}
	name := mappingName(id)
	formatted, err := s.openLUKS(ctx, dev, name, []byte(key))
	if err != nil {
		return nil, rpcError(fmt.Errorf("volume %s: %w", id, err))
	}
	ctrl.LoggerFrom(ctx).Info("Staged encrypted volume", "volumeID", id, "device", dev,
		"mapping", mappingPath(name), "formatted", formatted)
	return &csi.NodeStageVolumeResponse{}, nil
}

// NodeUnstageVolume closes the dm-crypt mapping of an encrypted volume; for a plain volume, or one
// already closed, it does nothing. A mapping still mounted or open is refused (FailedPrecondition).
func (s *Server) NodeUnstageVolume(
	ctx context.Context,
	req *csi.NodeUnstageVolumeRequest,
) (*csi.NodeUnstageVolumeResponse, error) {
	id, staging := req.GetVolumeId(), req.GetStagingTargetPath()
	if id == "" || staging == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and staging target path are required")
	}
	if err := confine(s.kubeletDir, staging); err != nil {
		return nil, rpcError(err)
	}
	release, err := s.locks.Lock(id)
	if err != nil {
		return nil, err
	}
	defer release()

	name := mappingName(id)
	closed, err := s.closeLUKS(ctx, name)
	if err != nil {
		return nil, rpcError(fmt.Errorf("volume %s: %w", id, err))
	}
	if closed {
		ctrl.LoggerFrom(ctx).Info("Unstaged encrypted volume", "volumeID", id, "mapping", mappingPath(name))
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// checkVolumeRequest checks what NodeStageVolume and NodePublishVolume share: the volume ID, the path
// (named what in the message) and the capability are given, the capability is one the driver serves,
// the volume context's encryption is known, and the path lies below the kubelet's directory. It
// returns the encryption ("" for a plain volume) or the gRPC error.
func (s *Server) checkVolumeRequest(
	id, what, path string,
	c *csi.VolumeCapability,
	volumeContext map[string]string,
) (string, error) {
	if id == "" || path == "" || c == nil {
		return "", status.Errorf(codes.InvalidArgument, "volume ID, %s and volume capability are required", what)
	}
	if err := lvmcsi.ValidateCapability(c); err != nil {
		return "", status.Error(codes.InvalidArgument, err.Error())
	}
	encryption, err := lvmcsi.Encryption(volumeContext)
	if err != nil {
		return "", status.Error(codes.InvalidArgument, err.Error())
	}
	if err := confine(s.kubeletDir, path); err != nil {
		return "", rpcError(err)
	}
	return encryption, nil
}
