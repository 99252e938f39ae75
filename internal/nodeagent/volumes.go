package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	csinode "github.com/lvm-operator/lvm-operator/internal/csi/node"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// LVSource is what Volumes needs of lvmd; *lvmd.Service implements it.
type LVSource interface {
	GetLV(ctx context.Context, name, class string) (lvmd.LV, error)
	Capacities(ctx context.Context) ([]lvmd.Capacity, error)
}

// Volumes maps CSI volume IDs to LVs through lvmd; it implements the CSI node service's Volumes. A
// volume ID is the LV name (see package controller/logicalvolume). Lookups read lvmd's in-memory
// state, not lvm2.
type Volumes struct {
	lvs LVSource
	// stat reports on a device path (os.Stat: the agent sees the host's /dev).
	stat func(string) error
}

// Activator is what lvmd offers to make an LV whose device node is missing usable again;
// *lvmd.Service implements it (an external lvmd does not: its LVs stay as lvm2 left them).
type Activator interface {
	ActivateLV(ctx context.Context, name, class string) error
}

var _ csinode.Volumes = (*Volumes)(nil)

// NewVolumes returns Volumes over lvs.
func NewVolumes(lvs LVSource) *Volumes {
	return &Volumes{lvs: lvs, stat: func(p string) error { _, err := os.Stat(p); return err }}
}

// Device returns the device node /dev/<vg>/<lv> of the LV named volumeID in any device class, and its
// size in bytes; an error wrapping csinode.ErrVolumeNotFound when no class has it.
func (v *Volumes) Device(ctx context.Context, volumeID string) (string, int64, error) {
	lv, found, err := v.FindLV(ctx, volumeID)
	if err != nil {
		return "", 0, err
	}
	if !found {
		return "", 0, fmt.Errorf("volume %s: %w", volumeID, csinode.ErrVolumeNotFound)
	}
	if err := v.ensureDevice(ctx, lv); err != nil {
		return "", 0, fmt.Errorf("volume %s: %w", volumeID, err)
	}
	return lv.Path, int64(lv.Size), nil
}

// FindLV returns the LV lvmd made named id in any device class of this node (the LV of a CSI volume
// or snapshot ID); found is false when no class has it.
func (v *Volumes) FindLV(ctx context.Context, id string) (lvmd.LV, bool, error) {
	classes, err := v.lvs.Capacities(ctx)
	if err != nil {
		return lvmd.LV{}, false, fmt.Errorf("look up volume %s: %w", id, err)
	}
	for _, dc := range classes {
		lv, err := v.lvs.GetLV(ctx, id, dc.DeviceClass)
		switch {
		case err == nil:
			return lv, true, nil
		case errors.Is(err, lvmd.ErrNotFound),
			errors.Is(err, lvmd.ErrNotReady),
			errors.Is(err, lvmd.ErrInvalidArgument),
			errors.Is(err, lvmd.ErrNotOurs):
			// Not in this class: absent, the class has no VG, the LV belongs to another class of the
			// VG, or it is not an LV lvmd made (never handed to a pod).
		default:
			return lvmd.LV{}, false, fmt.Errorf("look up volume %s in device class %s: %w", id, dc.DeviceClass, err)
		}
	}
	return lvmd.LV{}, false, nil
}

// ensureDevice makes sure lv's device node exists: when it does not (an lvcreate killed midway left
// the LV inactive or without its link), lvmd activates the LV and creates its nodes.
func (v *Volumes) ensureDevice(ctx context.Context, lv lvmd.LV) error {
	err := v.stat(lv.Path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // present, or not ours to judge: the command that uses it reports the problem
	}
	a, ok := v.lvs.(Activator)
	if !ok {
		return fmt.Errorf("device %s of LV %s is missing (activate it with lvchange -ay)", lv.Path, lv.Name)
	}
	if err := a.ActivateLV(ctx, lv.Name, lv.DeviceClass); err != nil {
		return fmt.Errorf("device %s is missing: %w", lv.Path, err)
	}
	if err := v.stat(lv.Path); err != nil {
		return fmt.Errorf("device %s is still missing after activating LV %s: %w", lv.Path, lv.Name, err)
	}
	return nil
}
