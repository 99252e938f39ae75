package node

import (
	"context"
	"errors"
	"fmt"
	"slices"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// Errors the RPC methods map to gRPC codes.
var (
	// errFilesystemMismatch: the device carries another filesystem than the volume asks for.
	errFilesystemMismatch = errors.New("device already carries another filesystem")
	// errUnsupported: this node cannot do what is asked (e.g. mkfs.btrfs is not installed).
	errUnsupported = errors.New("not supported on this node")
	// errSingleWriter: a SINGLE_NODE_SINGLE_WRITER volume is already published at another target.
	errSingleWriter = errors.New("single-writer volume already published")
	// errNotMounted: the volume path is not a mount point.
	errNotMounted = errors.New("not mounted")
)

// detectFilesystem probes dev directly (not udev's cache) and returns its filesystem type, "" when the
// device carries no signature, and the filesystem's UUID. A device that cannot be read is an error,
// never blank.
func (s *Server) detectFilesystem(ctx context.Context, dev string) (fsType, uuid string, err error) {
	sig, err := devices.ProbeSignatures(ctx, s.exec, dev)
	if err != nil {
		return "", "", err
	}
	switch {
	case slices.Contains(sig.Types, devices.Ambivalent):
		return "", "", fmt.Errorf("%w: %s carries conflicting signatures", errFilesystemMismatch, dev)
	case len(sig.Types) > 0:
		return sig.Types[0], sig.UUID, nil
	case sig.PartTable != "":
		// A partition table is still not blank.
		return "partition table " + sig.PartTable, "", nil
	}
	return "", "", nil
}

// ensureFilesystem formats a blank dev with fsType and refuses a device carrying anything else. An
// existing btrfs gets a fresh fsid first when another device mounted on this node has its fsid.
func (s *Server) ensureFilesystem(ctx context.Context, dev, fsType string) (formatted bool, err error) {
	existing, uuid, err := s.detectFilesystem(ctx, dev)
	if err != nil {
		return false, err
	}
	switch existing {
	case fsType:
		if fsType == lvmcsi.FSBtrfs {
			return false, s.ensureUniqueBtrfsFSID(ctx, dev, uuid)
		}
		return false, nil
	case "":
	default:
		return false, fmt.Errorf("%w: %s holds %s, the volume asks for %s; refusing to format it",
			errFilesystemMismatch, dev, existing, fsType)
	}
	name, args := mkfsCommand(fsType, dev)
	if err := s.exec.Exec(ctx, exec.Cmd{Name: name, Args: args}); err != nil {
		if exec.IsProgramNotFound(err) {
			return false, fmt.Errorf("%w: %s filesystems (%s is not installed): %w", errUnsupported, fsType, name, err)
		}
		return false, fmt.Errorf("format %s as %s: %w", dev, fsType, err)
	}
	return true, nil
}

func mkfsCommand(fsType, dev string) (string, []string) {
	// No -F/-f: mkfs.xfs and mkfs.btrfs then refuse a device that carries a signature after all, a
	// second guard behind the probe. mke2fs only asks on a terminal (measured in the UML guest: it
	// overwrites an ext4 without -F and with stdin at EOF), so for ext4 the probe is the guard.
	return "mkfs." + fsType, []string{dev}
}

// resizeFilesystem grows the filesystem of dev mounted at path to the device size.
func (s *Server) resizeFilesystem(ctx context.Context, dev, path string) error {
	fsType, _, err := s.detectFilesystem(ctx, dev)
	if err != nil {
		return err
	}
	var name string
	var args []string
	switch fsType {
	case "ext2", "ext3", lvmcsi.FSExt4:
		name, args = "resize2fs", []string{dev}
	case lvmcsi.FSXFS:
		name, args = "xfs_growfs", []string{path}
	case lvmcsi.FSBtrfs:
		name, args = "btrfs", []string{"filesystem", "resize", "max", path}
	case "":
		return fmt.Errorf("%w: %s carries no filesystem", errUnsupported, dev)
	default:
		return fmt.Errorf("%w: growing %s filesystems", errUnsupported, fsType)
	}
	if err := s.exec.Exec(ctx, exec.Cmd{Name: name, Args: args}); err != nil {
		return fmt.Errorf("grow %s filesystem on %s: %w", fsType, dev, err)
	}
	return nil
}
