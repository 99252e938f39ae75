// Package node implements the CSI Node service of driver topolvm.io: it formats and mounts a node's
// logical volumes into pods (filesystem volumes) or bind-mounts their device nodes (raw block volumes),
// grows filesystems after expansion and reports usage and health (NodeGetVolumeHealth).
//
// Host commands (blkid, mkfs, resize2fs, xfs_growfs, btrfs, btrfstune, cryptsetup) run through the one
// exec.Executor; mounts go through k8s.io/mount-utils. Where a volume's device lives is asked of a
// Volumes implementation (the node agent's lvmd). Each publish mounts the device at its target; staging
// only matters for encrypted volumes (StorageClass parameter topolvm.io/encryption: luks2), whose
// LUKS2 container NodeStageVolume formats and opens and NodeUnstageVolume closes (crypt.go).
package node

import (
	"context"
	"errors"

	"github.com/container-storage-interface/spec/lib/go/csi"
	mount "k8s.io/mount-utils"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// ErrVolumeNotFound is returned (wrapped) by Volumes when the node has no LV with the volume ID.
var ErrVolumeNotFound = errors.New("logical volume not found")

// Volumes maps a CSI volume ID to the LV on this node.
type Volumes interface {
	// Device returns the device node of the LV with volumeID and its size in bytes, or an error
	// wrapping ErrVolumeNotFound.
	Device(ctx context.Context, volumeID string) (path string, sizeBytes int64, err error)
}

// PublishLimiter puts a volume's IO caps (VolumeAttributesClass) in force for the pod of a new
// publish; the node agent's IOLimiter implements it.
type PublishLimiter interface {
	// LimitPublished caps the IO of the pod whose publish of volumeID is mounted at target, if the
	// volume has caps.
	LimitPublished(ctx context.Context, volumeID, target string) error
}

// Options are the dependencies of the Node service.
type Options struct {
	// NodeName is the Kubernetes node name: the CSI node ID and the topology value.
	NodeName string
	// Volumes locates LVs.
	Volumes Volumes
	// Mounter mounts and unmounts (mount.New("") in production, mount.NewFakeMounter in tests).
	Mounter mount.Interface
	// Exec runs blkid, mkfs.*, resize2fs, xfs_growfs, btrfs, btrfstune and cryptsetup.
	Exec exec.Executor
	// KubeletDir is the kubelet's root directory (DefaultKubeletDir when empty). Target and volume
	// paths must lie below it: NodePublish, NodeUnpublish and NodeExpand refuse any other path with
	// InvalidArgument.
	KubeletDir string
	// Limiter caps the IO of each new publish's pod when the volume has caps; nil caps nothing.
	Limiter PublishLimiter
}

// Server is the CSI Node service.
type Server struct {
	csi.UnimplementedNodeServer

	nodeName string
	volumes  Volumes
	mounter  mount.Interface
	exec     exec.Executor
	locks    lvmcsi.VolumeLocks
	// kubeletDir confines target and volume paths.
	kubeletDir string
	// btrfsSysDir lists the mounted btrfs filesystems (defaultBtrfsSysDir; tests change it).
	btrfsSysDir string
	// mapperDir holds the device nodes of open dm-crypt mappings (mapperDir; tests change it).
	mapperDir string
	// kdf holds a token per running key derivation (maxKeyDerivations).
	kdf chan struct{}
	// limiter caps the IO of new publishes (nil: none).
	limiter PublishLimiter
}

// New returns the Node service.
func New(o Options) (*Server, error) {
	if o.NodeName == "" || o.Volumes == nil || o.Mounter == nil || o.Exec == nil {
		return nil, errors.New("csi node: NodeName, Volumes, Mounter and Exec are required")
	}
	return &Server{
		nodeName: o.NodeName, volumes: o.Volumes, mounter: o.Mounter, exec: o.Exec,
		kubeletDir: kubeletDirOrDefault(o.KubeletDir), btrfsSysDir: defaultBtrfsSysDir, mapperDir: mapperDir,
		kdf: make(chan struct{}, maxKeyDerivations), limiter: o.Limiter,
	}, nil
}

// NodeGetInfo returns the node name as node ID and topology; the number of volumes is not limited.
func (s *Server) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{
		NodeId:             s.nodeName,
		AccessibleTopology: &csi.Topology{Segments: map[string]string{driver.TopologyNodeKey: s.nodeName}},
	}, nil
}

// NodeGetCapabilities advertises staging (used by encrypted volumes only), volume stats, expansion and
// volume health.
// SINGLE_NODE_MULTI_WRITER lets the kubelet pass SINGLE_NODE_SINGLE_WRITER for ReadWriteOncePod.
func (s *Server) NodeGetCapabilities(
	context.Context,
	*csi.NodeGetCapabilitiesRequest,
) (*csi.NodeGetCapabilitiesResponse, error) {
	var caps []*csi.NodeServiceCapability
	for _, t := range []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH,
		csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
	} {
		caps = append(caps, &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{
			Rpc: &csi.NodeServiceCapability_RPC{Type: t},
		}})
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}
