package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	mount "k8s.io/mount-utils"
	ctrl "sigs.k8s.io/controller-runtime"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/iolimit"
)

// NodePublishVolume mounts the volume at the target path: a filesystem volume is formatted when blank
// and mounted on a directory, and a filesystem it already carried is grown to the device (a restore
// or clone into a larger claim); a block volume's device node is bind-mounted on a file. A target that is
// already mounted is left as it is. An encrypted volume publishes its dm-crypt mapping, which
// NodeStageVolume opened (FailedPrecondition when it is not open). The pod's cgroup gets the volume's IO
// caps, if it has any (VolumeAttributesClass).
func (s *Server) NodePublishVolume(
	ctx context.Context,
	req *csi.NodePublishVolumeRequest,
) (*csi.NodePublishVolumeResponse, error) {
	id, target, c := req.GetVolumeId(), req.GetTargetPath(), req.GetVolumeCapability()
	encryption, err := s.checkVolumeRequest(id, "target path", target, c, req.GetVolumeContext())
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
	if encryption != "" {
		// The pod gets the opened dm-crypt mapping, never the LV with its ciphertext.
		if dev, err = s.stagedMapping(ctx, id); err != nil {
			return nil, rpcError(err)
		}
	}
	if c.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER {
		if err := s.checkSingleWriter(dev, target); err != nil {
			return nil, rpcError(err)
		}
	}
	if c.GetBlock() != nil {
		err = s.publishBlock(ctx, dev, target, req.GetReadonly())
	} else {
		err = s.publishFilesystem(ctx, dev, target, c, req.GetReadonly())
	}
	if err != nil {
		return nil, rpcError(err)
	}
	if s.limiter != nil {
		// Before the pod's containers start: the kubelet starts them once every volume is published.
		// A failure leaves the mount; the kubelet's retry finds it and caps again.
		if err := s.limiter.LimitPublished(ctx, id, target); err != nil {
			return nil, rpcError(fmt.Errorf("volume %s: %w", id, err))
		}
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (s *Server) publishFilesystem(
	ctx context.Context,
	dev, target string,
	c *csi.VolumeCapability,
	readonly bool,
) error {
	fsType, err := lvmcsi.FSType(c, nil)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return fmt.Errorf("create target directory: %w", err)
	}
	if mounted, err := s.mounter.IsMountPoint(target); err != nil {
		return fmt.Errorf("check mount point %s: %w", target, err)
	} else if mounted {
		ctrl.LoggerFrom(ctx).V(1).Info("Target already mounted", "target", target)
		return nil
	}
	formatted, err := s.ensureFilesystem(ctx, dev, fsType)
	if err != nil {
		return err
	}
	opts := slices.Clone(c.GetMount().GetMountFlags())
	if readonly {
		opts = append(opts, "ro")
	}
	if fsType == lvmcsi.FSXFS {
		// Snapshots and clones carry their origin's UUID; xfs refuses a second mount without nouuid.
		opts = append(opts, "nouuid")
	}
	if err := s.mounter.Mount(dev, target, fsType, opts); err != nil {
		return fmt.Errorf("mount %s on %s: %w", dev, target, err)
	}
	if !formatted && !readonly && fsType != lvmcsi.FSBtrfs {
		// A filesystem made earlier can be smaller than its LV: a snapshot or clone restored into a
		// larger claim carries its origin's filesystem. Growing to the device is a no-op otherwise
		// for resize2fs and xfs_growfs; btrfs refuses any resize of a filesystem under 256 MiB
		// (EINVAL, measured in the guest), so it is left to NodeExpandVolume.
		if err := s.resizeFilesystem(ctx, dev, target); err != nil {
			if uerr := s.mounter.Unmount(target); uerr != nil {
				return fmt.Errorf("%w (and unmount %s: %w)", err, target, uerr)
			}
			return err
		}
	}
	ctrl.LoggerFrom(ctx).Info("Mounted volume", "device", dev, "target", target, "fsType", fsType,
		"formatted", formatted, "options", opts)
	return nil
}

func (s *Server) publishBlock(ctx context.Context, dev, target string, readonly bool) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return fmt.Errorf("create target parent directory: %w", err)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o640)
	if err != nil {
		return fmt.Errorf("create target file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create target file: %w", err)
	}
	if mounted, err := s.mounter.IsMountPoint(target); err != nil {
		return fmt.Errorf("check mount point %s: %w", target, err)
	} else if mounted {
		ctrl.LoggerFrom(ctx).V(1).Info("Target already mounted", "target", target)
		return nil
	}
	opts := []string{"bind"}
	if readonly {
		opts = append(opts, "ro")
	}
	if err := s.mounter.Mount(dev, target, "", opts); err != nil {
		return fmt.Errorf("bind-mount %s on %s: %w", dev, target, err)
	}
	ctrl.LoggerFrom(ctx).Info("Bind-mounted block volume", "device", dev, "target", target, "readonly", readonly)
	return nil
}

// checkSingleWriter fails with errSingleWriter when dev is mounted somewhere other than target. The
// kubelet enforces ReadWriteOncePod before it calls us; this catches what it cannot see. Filesystem
// mounts are matched by device path after resolving symlinks. A block volume's bind mount is listed
// with the source and type of the filesystem holding the device node (devtmpfs), not the device, so
// such mounts are matched by the device number the mounted path stats as.
func (s *Server) checkSingleWriter(dev, target string) error {
	mps, err := s.mounter.List()
	if err != nil {
		return fmt.Errorf("list mounts: %w", err)
	}
	want, absTarget := resolve(dev), resolve(target)
	for _, mp := range mps {
		if resolve(mp.Path) == absTarget {
			continue
		}
		if resolve(mp.Device) == want || bindsDevice(mp, want) {
			return fmt.Errorf("%w: %s is already mounted at %s", errSingleWriter, dev, mp.Path)
		}
	}
	return nil
}

// bindsDevice reports whether mp is a bind mount of the block device node dev: a mount from a device
// filesystem whose path stats as the same block device. Other mounts are never stat'ed (a stat of a
// dead network mount could hang).
func bindsDevice(mp mount.MountPoint, dev string) bool {
	if mp.Type != "devtmpfs" && mp.Type != "tmpfs" {
		return false
	}
	mounted, ok := blockDevice(mp.Path)
	if !ok {
		return false
	}
	want, ok := blockDevice(dev)
	return ok && mounted == want
}

// blockDevice returns the device number of the block device node at p.
func blockDevice(p string) (iolimit.Device, bool) {
	d, err := iolimit.BlockDevice(p)
	return d, err == nil
}

// resolve follows symlinks of p, or returns p when that fails.
func resolve(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// NodeUnpublishVolume unmounts the target path and removes it; a missing target is a success.
func (s *Server) NodeUnpublishVolume(
	ctx context.Context,
	req *csi.NodeUnpublishVolumeRequest,
) (*csi.NodeUnpublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	if id == "" || target == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and target path are required")
	}
	if err := confine(s.kubeletDir, target); err != nil {
		return nil, rpcError(err)
	}
	release, err := s.locks.Lock(id)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := mount.CleanupMountPoint(target, s.mounter, true); err != nil {
		return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Unpublished volume", "volumeID", id, "target", target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// rpcError maps an error of a helper to a gRPC status error.
func rpcError(err error) error {
	code := codes.Internal
	switch {
	case errors.Is(err, ErrVolumeNotFound):
		code = codes.NotFound
	case errors.Is(err, errFilesystemMismatch), errors.Is(err, errUnsupported), errors.Is(err, errNotMounted),
		errors.Is(err, errSingleWriter), errors.Is(err, errNotStaged), errors.Is(err, errInUse):
		code = codes.FailedPrecondition
	case errors.Is(err, lvmcsi.ErrInvalidCapability), errors.Is(err, errOutsideKubeletDir),
		errors.Is(err, lvmcsi.ErrInvalidEncryption), errors.Is(err, errMissingKey):
		code = codes.InvalidArgument
	case errors.Is(err, errWrongKey):
		code = codes.PermissionDenied
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	}
	return status.Error(code, err.Error())
}
