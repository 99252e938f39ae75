package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// defaultBtrfsSysDir is where the kernel lists the mounted btrfs filesystems, one directory per fsid
// whose devices/ holds an entry per member block device (dm-3, ...).
const defaultBtrfsSysDir = "/sys/fs/btrfs"

// ensureUniqueBtrfsFSID gives the btrfs on dev a fresh fsid when a filesystem with its fsid is
// mounted on this node from another device. A snapshot, clone or restored volume carries its
// origin's fsid, and the kernel (before 6.7) refuses to mount a second device with a mounted fsid
// (mount fails with "File exists"). `btrfstune -m` changes the fsid in the superblock only (the
// old one is kept as metadata_uuid; no metadata is rewritten), on the unmounted dev; the data and
// the origin are untouched. dev itself mounted at another target needs nothing (btrfstune would refuse
// a mounted device).
func (s *Server) ensureUniqueBtrfsFSID(ctx context.Context, dev, fsid string) error {
	if fsid == "" {
		return nil
	}
	devices := filepath.Join(s.btrfsSysDir, fsid, "devices")
	entries, err := os.ReadDir(devices)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list the devices of mounted btrfs %s: %w", fsid, err)
	}
	for _, e := range entries {
		if isDevice(filepath.Join(devices, e.Name()), dev) {
			return nil
		}
	}
	if err := s.exec.Exec(ctx, exec.Cmd{Name: "btrfstune", Args: []string{"-m", dev}}); err != nil {
		if exec.IsProgramNotFound(err) {
			return fmt.Errorf("%w: btrfs %s is mounted from another device and btrfstune is not installed: %w",
				errUnsupported, fsid, err)
		}
		return fmt.Errorf("new fsid for the btrfs on %s (fsid %s is mounted from another device): %w", dev, fsid, err)
	}
	ctrl.LoggerFrom(ctx).Info("Changed the fsid of a btrfs copy", "device", dev, "mountedFsid", fsid)
	return nil
}

// isDevice reports whether the sysfs block device entry is dev: by device number (the entry's dev file
// holds "major:minor"), or by kernel name when dev cannot be stat'ed. Names alone do not do: without
// udev, /dev/<vg>/<lv> leads to a device node /dev/mapper/<vg>-<lv>, not to /dev/dm-N.
func isDevice(entry, dev string) bool {
	if rdev, ok := blockDevice(dev); ok {
		b, err := os.ReadFile(filepath.Join(entry, "dev"))
		return err == nil && strings.TrimSpace(string(b)) == rdev.String()
	}
	return filepath.Base(entry) == filepath.Base(resolve(dev))
}
