package lvm

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ExtendOptions describes an lvextend. At least one field must be set.
type ExtendOptions struct {
	// Size is the new size in bytes (absolute, not a delta).
	Size uint64
	// Extents is the new size relative to the VG, e.g. PercentOf(90, "VG").
	Extents Extents
	// PoolMetadataSize is the new thin pool metadata size in bytes.
	PoolMetadataSize uint64
}

// ExtendLV grows an LV of an owned VG (`lvextend`). It never shrinks; asking
// for the current size succeeds without change. Filesystems are not resized
// (that is the caller's job: resize2fs / xfs_growfs).
func (c *Client) ExtendLV(ctx context.Context, vg VG, name string, o ExtendOptions) error {
	args := []string{"lvextend", "-y"}
	switch {
	case o.Size > 0 && o.Extents != "":
		return fmt.Errorf("extend LV %s/%s: %w: both size and extents", vg.Name, name, ErrInvalidArgument)
	case o.Size > 0:
		args = append(args, "-L", sizeArg(o.Size))
	case o.Extents != "":
		if !extentsRE.MatchString(string(o.Extents)) {
			return fmt.Errorf("extend LV %s/%s: %w: extents %q", vg.Name, name, ErrInvalidArgument, o.Extents)
		}
		args = append(args, "-l", string(o.Extents))
	}
	if o.PoolMetadataSize > 0 {
		args = append(args, "--poolmetadatasize", sizeArg(o.PoolMetadataSize))
	}
	if len(args) == 2 {
		return fmt.Errorf("extend LV %s/%s: %w: nothing to extend", vg.Name, name, ErrInvalidArgument)
	}
	err := c.lvCommand(ctx, vg, name, "extend LV", args...)
	if errors.Is(err, ErrSizeUnchanged) {
		return nil
	}
	return err
}

// lvCommand runs `lvm args... vg/name` on LV name of an owned VG; what names the command in its
// errors.
func (c *Client) lvCommand(ctx context.Context, vg VG, name, what string, args ...string) error {
	if err := c.checkOwned(vg); err != nil {
		return fmt.Errorf("%s %s: %w", what, name, err)
	}
	if err := ValidName(name); err != nil {
		return fmt.Errorf("%s in VG %s: %w", what, vg.Name, err)
	}
	if err := c.run(ctx, append(args, vg.Name+"/"+name)...); err != nil {
		return fmt.Errorf("%s %s/%s: %w", what, vg.Name, name, err)
	}
	return nil
}

// RemoveLV removes an LV of an owned VG (`lvremove -y`). Removing a thin
// pool removes its thin LVs; removing an open LV fails.
func (c *Client) RemoveLV(ctx context.Context, vg VG, name string) error {
	return c.RemoveLVs(ctx, vg, []string{name})
}

// RemoveLVs removes LVs of one owned VG with one `lvremove -y`: lvm2 scans the
// devices, takes the VG lock and reads its metadata once for all of them. When
// it fails, some of the LVs may be gone and others not; the error does not say
// which (remove them one at a time to learn that).
func (c *Client) RemoveLVs(ctx context.Context, vg VG, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if err := c.checkOwned(vg); err != nil {
		return fmt.Errorf("remove LVs %s: %w", strings.Join(names, ", "), err)
	}
	args := make([]string, 0, len(names)+2)
	args = append(args, "lvremove", "-y")
	for _, name := range names {
		if err := ValidName(name); err != nil {
			return fmt.Errorf("remove LV in VG %s: %w", vg.Name, err)
		}
		args = append(args, vg.Name+"/"+name)
	}
	if err := c.run(ctx, args...); err != nil {
		return fmt.Errorf("remove LV %s/%s: %w", vg.Name, strings.Join(names, ","), err)
	}
	return nil
}

// RemoveThinPool removes an owned thin pool only if no thin LV uses it, and
// never one created meanwhile: it deactivates the pool (`lvchange -an`,
// which fails while a thin LV is active) and removes it without -y
// (`lvremove vg/pool` with stdin at EOF), so lvm2's prompts for an active
// pool or for dependent volumes answer no. A pool with thin LVs is an
// error, not a loss.
func (c *Client) RemoveThinPool(ctx context.Context, vg VG, name string) error {
	if err := c.lvCommand(ctx, vg, name, "deactivate thin pool", "lvchange", "-an"); err != nil {
		return err
	}
	return c.lvCommand(ctx, vg, name, "remove thin pool", "lvremove")
}

// ActivateOptions describes an lvchange activation.
type ActivateOptions struct {
	Active bool
	// IgnoreSkip activates despite the activation-skip flag (-K), needed
	// for thin snapshots created without SnapshotOptions.Activate.
	IgnoreSkip bool
}

// ActivateLV activates or deactivates an LV of an owned VG (`lvchange`).
func (c *Client) ActivateLV(ctx context.Context, vg VG, name string, o ActivateOptions) error {
	args := []string{"lvchange", activationArg(o.Active)}
	if o.IgnoreSkip {
		args = append(args, "-K")
	}
	return c.lvCommand(ctx, vg, name, fmt.Sprintf("change activation (to %t) of LV", o.Active), args...)
}

// AddLVTags adds tags to an LV of an owned VG (`lvchange --addtag`).
func (c *Client) AddLVTags(ctx context.Context, vg VG, name string, tags ...string) error {
	ta, err := tagArgs(tags)
	if err != nil || len(ta) == 0 {
		return fmt.Errorf("tag LV %s/%s: %w", vg.Name, name, errors.Join(ErrInvalidArgument, err))
	}
	return c.lvCommand(ctx, vg, name, "tag LV", append([]string{"lvchange"}, ta...)...)
}

// SetThinPoolZero turns the zeroing of newly provisioned chunks of a thin pool of an owned VG on or
// off (`lvchange --zero y|n`). With it off, the part of a chunk a new thin LV has not written yet
// reads as what the chunk held before: a previous tenant's data.
func (c *Client) SetThinPoolZero(ctx context.Context, vg VG, name string, zero bool) error {
	return c.lvCommand(
		ctx,
		vg,
		name,
		fmt.Sprintf("set zeroing (to %t) of thin pool", zero),
		"lvchange",
		"--zero",
		yn(zero),
	)
}

// RenameLV renames an LV of an owned VG (`lvrename VG from to`).
func (c *Client) RenameLV(ctx context.Context, vg VG, from, to string) error {
	if err := c.checkOwned(vg); err != nil {
		return fmt.Errorf("rename LV %s: %w", from, err)
	}
	if err := errors.Join(ValidName(from), ValidName(to)); err != nil {
		return fmt.Errorf("rename LV in VG %s: %w", vg.Name, err)
	}
	if err := c.run(ctx, "lvrename", vg.Name, from, to); err != nil {
		return fmt.Errorf("rename LV %s/%s to %s: %w", vg.Name, from, to, err)
	}
	return nil
}

// MakeNodes has lvm2 create the missing device nodes and links of an active LV of an owned VG
// (`vgmknodes VG/LV`); it changes no metadata.
func (c *Client) MakeNodes(ctx context.Context, vg VG, name string) error {
	return c.lvCommand(ctx, vg, name, "make device nodes of LV", "vgmknodes")
}
