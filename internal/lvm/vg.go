package lvm

import (
	"context"
	"fmt"
)

// ExtendVG adds devices to an owned VG (`vgextend`, without -y: see CreatePVs).
func (c *Client) ExtendVG(ctx context.Context, vg VG, devices ...string) error {
	if err := c.vgDevicesOp(ctx, []string{"vgextend"}, vg, devices); err != nil {
		return fmt.Errorf("extend VG %s with %v: %w", vg.Name, devices, err)
	}
	return nil
}

// ReduceVG removes unused devices from an owned VG (`vgreduce`).
func (c *Client) ReduceVG(ctx context.Context, vg VG, devices ...string) error {
	if err := c.vgDevicesOp(ctx, []string{"vgreduce", "-y"}, vg, devices); err != nil {
		return fmt.Errorf("reduce VG %s by %v: %w", vg.Name, devices, err)
	}
	return nil
}

func (c *Client) vgDevicesOp(ctx context.Context, cmd []string, vg VG, devices []string) error {
	if err := c.checkOwned(vg); err != nil {
		return err
	}
	if len(devices) == 0 {
		return fmt.Errorf("%w: no devices", ErrInvalidArgument)
	}
	for _, d := range devices {
		if err := validDevice(d); err != nil {
			return err
		}
	}
	return c.run(ctx, append(append(cmd, vg.Name), devices...)...)
}

// RemoveVG removes an owned VG (`vgremove`). It never forces: a VG that
// still holds LVs is not removed (lvm2's confirmation prompt reads EOF).
func (c *Client) RemoveVG(ctx context.Context, vg VG) error {
	if err := c.checkOwned(vg); err != nil {
		return fmt.Errorf("remove VG: %w", err)
	}
	if err := c.run(ctx, "vgremove", vg.Name); err != nil {
		return fmt.Errorf("remove VG %s: %w", vg.Name, err)
	}
	return nil
}

// ActivateVG activates or deactivates all LVs of an owned VG (`vgchange
// -ay|-an`).
func (c *Client) ActivateVG(ctx context.Context, vg VG, active bool) error {
	if err := c.checkOwned(vg); err != nil {
		return fmt.Errorf("change activation of VG: %w", err)
	}
	if err := c.run(ctx, "vgchange", activationArg(active), vg.Name); err != nil {
		return fmt.Errorf("change activation of VG %s to %t: %w", vg.Name, active, err)
	}
	return nil
}

func activationArg(active bool) string {
	if active {
		return "-ay"
	}
	return "-an"
}
