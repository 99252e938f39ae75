package devices

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// ErrWipeNotConfirmed is returned by Wipe without the explicit opt-in.
var ErrWipeNotConfirmed = errors.New("wiping was not confirmed with ForceWipeDevicesAndDestroyAllData(true)")

// ErrBusy is returned by Wipe for a device (or partition, or holder) that is
// mounted or held by something other than device-mapper.
var ErrBusy = errors.New("device is busy")

// WipeOptIn is the explicit consent Wipe requires. Its zero value refuses;
// the only way to obtain a consenting value is
// ForceWipeDevicesAndDestroyAllData(true), named after the LVMCluster field
// that must be set for it.
type WipeOptIn struct {
	destroyAllData bool
}

// ForceWipeDevicesAndDestroyAllData returns the opt-in for Wipe. Pass the
// user's deviceSelector.forceWipeDevicesAndDestroyAllData value; only true
// consents.
func ForceWipeDevicesAndDestroyAllData(confirm bool) WipeOptIn {
	return WipeOptIn{destroyAllData: confirm}
}

// Wipe destroys everything on dev: it removes the device-mapper devices
// stacked on it and its partitions (deepest first, `dmsetup remove`), then
// erases all signatures of the partitions and the device (`wipefs --all
// --force`). It refuses without the opt-in, and for mounted devices.
func (h *Host) Wipe(ctx context.Context, dev string, opt WipeOptIn) error {
	if !opt.destroyAllData {
		return fmt.Errorf("wipe %s: %w", dev, ErrWipeNotConfirmed)
	}
	if !strings.HasPrefix(dev, "/dev/") {
		return fmt.Errorf("wipe %s: not a /dev path", dev)
	}
	resolved, err := filepath.EvalSymlinks(dev)
	if err != nil {
		resolved = dev // e.g. tests with a faked /sys; the kernel name is then the base name
	}
	name := path.Base(resolved)
	mounts, err := h.ReadMounts()
	if err != nil {
		return fmt.Errorf("wipe %s: %w", dev, err)
	}
	targets := append(h.partitions(name), "/dev/"+name)
	// Check everything before changing anything.
	for _, t := range targets {
		if err := h.checkUnmounted(path.Base(t), mounts, 0); err != nil {
			return fmt.Errorf("wipe %s: %w", dev, err)
		}
	}
	for _, t := range targets {
		if err := h.removeHolders(ctx, path.Base(t), 0); err != nil {
			return fmt.Errorf("wipe %s: %w", dev, err)
		}
	}
	// Partitions first: once the table is gone their signatures would
	// survive, invisible, at their old offsets.
	for _, t := range targets {
		if _, err := exec.Run(ctx, h.exec, "wipefs", "--all", "--force", t); err != nil {
			return fmt.Errorf("wipe %s: %w", dev, err)
		}
	}
	if len(targets) > 1 {
		// The partition table is gone, but the kernel may keep the
		// partitions (wipefs' re-read request can fail); drop them.
		if _, err := exec.Run(ctx, h.exec, "partx", "-d", "/dev/"+name); err != nil {
			return fmt.Errorf("wipe %s: remove partitions from the kernel: %w", dev, err)
		}
	}
	return nil
}

// maxHolderDepth bounds the recursion over sysfs holders.
const maxHolderDepth = 16

// checkUnmounted fails with ErrBusy when the kernel device name or any
// device stacked on it is mounted, or when a holder is not device-mapper.
func (h *Host) checkUnmounted(name string, mounts MountTable, depth int) error {
	if depth > maxHolderDepth {
		return fmt.Errorf("holders of %s nest too deep: %w", name, ErrBusy)
	}
	if mp := h.mountPoints(name, mounts); len(mp) > 0 {
		return fmt.Errorf("/dev/%s is mounted at %s: %w", name, strings.Join(mp, ", "), ErrBusy)
	}
	holders, err := h.holders(name)
	if err != nil {
		return err
	}
	for _, holder := range holders {
		hn := path.Base(holder)
		if _, err := h.readTrimmed("sys/class/block/" + hn + "/dm/name"); err != nil {
			return fmt.Errorf("holder %s of %s is not a device-mapper device: %w", holder, name, ErrBusy)
		}
		if err := h.checkUnmounted(hn, mounts, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// removeHolders removes, deepest first, the device-mapper devices holding
// the kernel device name.
func (h *Host) removeHolders(ctx context.Context, name string, depth int) error {
	if depth > maxHolderDepth {
		return fmt.Errorf("holders of %s nest too deep: %w", name, ErrBusy)
	}
	holders, err := h.holders(name)
	if err != nil {
		return err
	}
	for _, holder := range holders {
		hn := path.Base(holder)
		if err := h.removeHolders(ctx, hn, depth+1); err != nil {
			return err
		}
		dmName, err := h.readTrimmed("sys/class/block/" + hn + "/dm/name")
		if err != nil {
			return fmt.Errorf("read device-mapper name of holder %s of %s: %w", holder, name, err)
		}
		if _, err := exec.Run(ctx, h.exec, "dmsetup", "remove", dmName); err != nil {
			return fmt.Errorf("remove device-mapper holder %s of %s: %w", dmName, name, err)
		}
	}
	return nil
}

func (h *Host) mountPoints(name string, mounts MountTable) []string {
	devno, err := h.readTrimmed("sys/class/block/" + name + "/dev")
	if err != nil {
		return nil
	}
	return mounts.byDev[devno]
}
