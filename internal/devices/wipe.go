package devices

import (
	"context"
	"errors"
	"fmt"
	"path"
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
// stacked on it and its partitions (deepest first, `dmsetup remove`), then,
// holding the device open exclusively (O_EXCL), erases all signatures of the
// partitions and the device (`wipefs --all --force`: force is needed for
// partition tables; the exclusive open is what guarantees nothing else uses
// the device). It refuses without the opt-in, for a path that is not a block
// device, and when the device, a partition or anything stacked on them is
// mounted (in any mount namespace, bind mounts included), is swap, is held
// open by a process or is held by something other than device-mapper.
func (h *Host) Wipe(ctx context.Context, dev string, opt WipeOptIn) error {
	if !opt.destroyAllData {
		return fmt.Errorf("wipe %s: %w", dev, ErrWipeNotConfirmed)
	}
	name, err := h.kernelName(dev)
	if err != nil {
		return fmt.Errorf("wipe %s: %w", dev, err)
	}
	u, err := h.ReadUsage()
	if err != nil {
		return fmt.Errorf("wipe %s: %w", dev, err)
	}
	targets := append(h.partitions(name), "/dev/"+name)
	// Check everything before changing anything.
	for _, t := range targets {
		if err := h.checkFree(path.Base(t), u, 0); err != nil {
			return fmt.Errorf("wipe %s: %w", dev, err)
		}
	}
	for _, t := range targets {
		if err := h.removeHolders(ctx, path.Base(t), 0); err != nil {
			return fmt.Errorf("wipe %s: %w", dev, err)
		}
	}
	excl, err := h.openExcl("/dev/" + name)
	if err != nil {
		return fmt.Errorf("wipe %s: cannot be opened exclusively: %w: %w", dev, err, ErrBusy)
	}
	defer func() { _ = excl.Close() }()
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

// checkFree fails with ErrBusy when the kernel device name or any device
// stacked on it is mounted, swap, held open or the backing device of a loop
// device, or when a holder is not device-mapper.
func (h *Host) checkFree(name string, u Usage, depth int) error {
	if depth > maxHolderDepth {
		return fmt.Errorf("holders of %s nest too deep: %w", name, ErrBusy)
	}
	devno, _ := h.readTrimmed("sys/class/block/" + name + "/dev")
	if mp := u.Mounts.of(devno, name, "/dev/"+name); len(mp) > 0 {
		return fmt.Errorf("/dev/%s is mounted at %s: %w", name, strings.Join(mp, ", "), ErrBusy)
	}
	if u.swap(name) {
		return fmt.Errorf("/dev/%s is an active swap area: %w", name, ErrBusy)
	}
	if by := u.openBy[devno]; devno != "" && len(by) > 0 {
		return fmt.Errorf("/dev/%s is held open by %s: %w", name, strings.Join(by, ", "), ErrBusy)
	}
	if loops := u.loopsOver[devno]; devno != "" && len(loops) > 0 {
		return fmt.Errorf(
			"/dev/%s is the backing device of loop device %s: %w",
			name,
			strings.Join(loops, ", "),
			ErrBusy,
		)
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
		if err := h.checkFree(hn, u, depth+1); err != nil {
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
