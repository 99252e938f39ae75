package lvm

import (
	"context"
	"fmt"
)

// RepairRAID replaces the images of a RAID LV of an owned VG that lie on missing PVs with new ones
// that lvm2 allocates on the VG's other PVs (on pvs only, when given): `lvconvert --repair -y`. The
// new images then resynchronize from the remaining ones (sync_percent climbs to 100). lvm2 refuses
// an LV that is not in sync (an image that never finished its first sync cannot be a source) and
// one without room for the new images apart from its remaining ones.
func (c *Client) RepairRAID(ctx context.Context, vg VG, name string, pvs ...string) error {
	if err := c.checkOwned(vg); err != nil {
		return fmt.Errorf("repair RAID LV %s: %w", name, err)
	}
	if err := ValidName(name); err != nil {
		return fmt.Errorf("repair RAID LV in VG %s: %w", vg.Name, err)
	}
	for _, d := range pvs {
		if err := validDevice(d); err != nil {
			return fmt.Errorf("repair RAID LV %s/%s: %w", vg.Name, name, err)
		}
	}
	args := append([]string{"lvconvert", "-y", "--repair", vg.Name + "/" + name}, pvs...)
	if err := c.run(ctx, args...); err != nil {
		return fmt.Errorf("repair RAID LV %s/%s: %w", vg.Name, name, err)
	}
	return nil
}

// RemoveMissingPVs drops the PVs lvm2 cannot find from an owned VG's metadata (`vgreduce
// --removemissing`). lvm2 refuses while an LV still has extents on one of them; this never forces
// it (--force would remove such LVs).
func (c *Client) RemoveMissingPVs(ctx context.Context, vg VG) error {
	if err := c.checkOwned(vg); err != nil {
		return fmt.Errorf("remove missing PVs: %w", err)
	}
	if err := c.run(ctx, "vgreduce", "--removemissing", vg.Name); err != nil {
		return fmt.Errorf("remove missing PVs of VG %s: %w", vg.Name, err)
	}
	return nil
}

// RefreshLV reloads the device-mapper tables of an LV of an owned VG (`lvchange --refresh`): a RAID
// LV whose image's disk failed and came back (health "refresh needed") takes the image back and
// resynchronizes it.
func (c *Client) RefreshLV(ctx context.Context, vg VG, name string) error {
	if err := c.checkOwned(vg); err != nil {
		return fmt.Errorf("refresh LV %s: %w", name, err)
	}
	if err := ValidName(name); err != nil {
		return fmt.Errorf("refresh LV in VG %s: %w", vg.Name, err)
	}
	if err := c.run(ctx, "lvchange", "--refresh", vg.Name+"/"+name); err != nil {
		return fmt.Errorf("refresh LV %s/%s: %w", vg.Name, name, err)
	}
	return nil
}
