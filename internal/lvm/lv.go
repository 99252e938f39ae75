package lvm

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
)

// RAIDType is an lvm2 RAID segment type.
type RAIDType string

// RAID levels supported by LVMCluster's raidConfig.
const (
	RAID1  RAIDType = "raid1"
	RAID4  RAIDType = "raid4"
	RAID5  RAIDType = "raid5"
	RAID6  RAIDType = "raid6"
	RAID10 RAIDType = "raid10"
)

// LVOptions describes a thick LV: linear, striped or RAID.
type LVOptions struct {
	Name string
	// Size in bytes; lvm2 rounds up to whole extents (and stripes).
	Size uint64
	Tags []string
	// Stripes > 1 makes a striped LV (or sets the RAID data stripes for
	// raid4/5/6/10). StripeSize is lvcreate -I as written, e.g. "64k"; "" = lvm2 default.
	Stripes    int
	StripeSize string
	// RAID selects a RAID segment type; empty = linear/striped.
	RAID RAIDType
	// Mirrors is the number of additional copies for raid1/raid10
	// (lvcreate -m); 0 = lvm2 default (1).
	Mirrors int
	// Extra are free-form lvcreate arguments (a device class's or an option class's), placed
	// after the layout and before the tags.
	Extra []string
}

// Args builds the lvcreate command line of the LV in vg. This and the other option types' Args
// are the only lvcreate builders; the Client's Create methods run them with the client's
// identity tags added.
func (o LVOptions) Args(vg string) ([]string, error) {
	if err := ValidName(o.Name); err != nil {
		return nil, err
	}
	if o.Size == 0 || o.Stripes < 0 || o.Mirrors < 0 {
		return nil, fmt.Errorf("%w: size %d, stripes %d, mirrors %d", ErrInvalidArgument, o.Size, o.Stripes, o.Mirrors)
	}
	args := []string{"lvcreate", "-y", "--wipesignatures", "y", "-n", o.Name, "-L", sizeArg(o.Size)}
	switch o.RAID {
	case "":
		if o.Mirrors > 0 {
			return nil, fmt.Errorf("%w: mirrors without a RAID type", ErrInvalidArgument)
		}
	case RAID1:
		args = append(args, "--type", string(o.RAID))
		if o.Stripes > 1 {
			return nil, fmt.Errorf("%w: raid1 does not stripe", ErrInvalidArgument)
		}
	case RAID4, RAID5, RAID6, RAID10:
		args = append(args, "--type", string(o.RAID))
		if o.Mirrors > 0 && o.RAID != RAID10 {
			return nil, fmt.Errorf("%w: %s has no mirrors", ErrInvalidArgument, o.RAID)
		}
	default:
		return nil, fmt.Errorf("%w: unknown RAID type %q", ErrInvalidArgument, o.RAID)
	}
	if o.Mirrors > 0 {
		args = append(args, "-m", strconv.Itoa(o.Mirrors))
	}
	if o.Stripes > 1 {
		args = append(args, "-i", strconv.Itoa(o.Stripes))
	}
	if o.StripeSize != "" {
		if err := ValidSizeArg(o.StripeSize); err != nil {
			return nil, err
		}
		args = append(args, "-I", o.StripeSize)
	}
	ta, err := tagArgs(o.Tags)
	if err != nil {
		return nil, err
	}
	return append(append(append(args, o.Extra...), ta...), vg), nil
}

// CreateLV creates a thick linear, striped or RAID LV in an owned VG.
func (c *Client) CreateLV(ctx context.Context, vg VG, o LVOptions) error {
	o.Tags = c.id.with(o.Tags)
	return c.create(ctx, vg, o.Name, o.Args)
}

func (c *Client) create(ctx context.Context, vg VG, name string, build func(vg string) ([]string, error)) error {
	if err := c.checkOwned(vg); err != nil {
		return fmt.Errorf("create LV %s: %w", name, err)
	}
	args, err := build(vg.Name)
	if err != nil {
		return fmt.Errorf("create LV %s in VG %s: %w", name, vg.Name, err)
	}
	if err := c.run(ctx, args...); err != nil {
		return fmt.Errorf("create LV %s in VG %s: %w", name, vg.Name, err)
	}
	return nil
}

// Extents is an lvm2 relative size such as "90%FREE" or "100%VG".
type Extents string

// PercentOf builds an Extents value; base is "FREE", "VG" or "PVS".
func PercentOf(percent int, base string) Extents {
	return Extents(fmt.Sprintf("%d%%%s", percent, base))
}

var extentsRE = regexp.MustCompile(`^([0-9]+|[0-9]{1,3}%(FREE|VG|PVS|ORIGIN))$`)

// ThinPoolOptions describes a thin pool.
type ThinPoolOptions struct {
	Name string
	// Exactly one of Size (bytes) and Extents (e.g. PercentOf(90, "FREE")).
	Size    uint64
	Extents Extents
	// ChunkSize in bytes (64 KiB multiple); 0 = lvm2 default.
	ChunkSize uint64
	// MetadataSize in bytes; 0 = lvm2 default.
	MetadataSize uint64
	// Zero makes the pool zero newly provisioned chunks (-Z y). Without it a
	// chunk that returned to the pool keeps its data, and a new thin LV reads
	// the parts of a chunk it has not written: lvms always sets it.
	Zero bool
	Tags []string
}

// Args builds the lvcreate command line of the thin pool in vg.
func (o ThinPoolOptions) Args(vg string) ([]string, error) {
	if err := ValidName(o.Name); err != nil {
		return nil, err
	}
	args := []string{"lvcreate", "-y", "--type", "thin-pool", "-n", o.Name}
	switch {
	case o.Size > 0 && o.Extents == "":
		args = append(args, "-L", sizeArg(o.Size))
	case o.Size == 0 && extentsRE.MatchString(string(o.Extents)):
		args = append(args, "-l", string(o.Extents))
	default:
		return nil, fmt.Errorf(
			"%w: thin pool needs a size or valid extents (got %d, %q)",
			ErrInvalidArgument,
			o.Size,
			o.Extents,
		)
	}
	if o.ChunkSize > 0 {
		args = append(args, "-c", sizeArg(o.ChunkSize))
	}
	if o.MetadataSize > 0 {
		args = append(args, "--poolmetadatasize", sizeArg(o.MetadataSize))
	}
	args = append(args, "-Z", yn(o.Zero))
	ta, err := tagArgs(o.Tags)
	if err != nil {
		return nil, err
	}
	return append(append(args, ta...), vg), nil
}

// CreateThinPool creates a thin pool in an owned VG.
func (c *Client) CreateThinPool(ctx context.Context, vg VG, o ThinPoolOptions) error {
	o.Tags = c.id.with(o.Tags)
	return c.create(ctx, vg, o.Name, o.Args)
}

// ThinLVOptions describes a thin LV.
type ThinLVOptions struct {
	Name string
	Pool string
	// VirtualSize in bytes.
	VirtualSize uint64
	Tags        []string
	// Extra are free-form lvcreate arguments, before the tags.
	Extra []string
}

// Args builds the lvcreate command line of the thin LV in vg.
func (o ThinLVOptions) Args(vg string) ([]string, error) {
	if err := ValidName(o.Name); err != nil {
		return nil, err
	}
	if err := ValidName(o.Pool); err != nil {
		return nil, err
	}
	if o.VirtualSize == 0 {
		return nil, fmt.Errorf("%w: thin LV without size", ErrInvalidArgument)
	}
	args := []string{"lvcreate", "-y", "--wipesignatures", "y", "-n", o.Name,
		"--type", "thin", "-V", sizeArg(o.VirtualSize), "--thinpool", o.Pool}
	ta, err := tagArgs(o.Tags)
	if err != nil {
		return nil, err
	}
	return append(append(append(args, o.Extra...), ta...), vg), nil
}

// CreateThinLV creates a thin LV in a pool of an owned VG.
func (c *Client) CreateThinLV(ctx context.Context, vg VG, o ThinLVOptions) error {
	o.Tags = c.id.with(o.Tags)
	return c.create(ctx, vg, o.Name, o.Args)
}

// SnapshotOptions describes a snapshot of Origin.
type SnapshotOptions struct {
	Name   string
	Origin string
	// Size in bytes makes a thick copy-on-write snapshot holding that much
	// changed data; 0 makes a thin snapshot (origin must be a thin LV).
	Size     uint64
	ReadOnly bool
	// Activate a thin snapshot at creation. lvm2 sets the activation-skip
	// flag on thin snapshots; with Activate it is created without it
	// (--setactivationskip n), so it is active at once and after reboots,
	// in the same single lvcreate. Without Activate the snapshot stays
	// inactive until ActivateLV with IgnoreSkip. Thick snapshots are always
	// active.
	Activate bool
	Tags     []string
}

// Args builds the lvcreate command line of the snapshot in vg.
func (o SnapshotOptions) Args(vg string) ([]string, error) {
	if err := ValidName(o.Name); err != nil {
		return nil, err
	}
	if err := ValidName(o.Origin); err != nil {
		return nil, err
	}
	args := []string{"lvcreate", "-y", "-s", "-n", o.Name}
	if o.Size > 0 {
		args = append(args, "-L", sizeArg(o.Size))
	} else if o.Activate {
		args = append(args, "--setactivationskip", "n")
	}
	if o.ReadOnly {
		args = append(args, "-p", "r")
	}
	ta, err := tagArgs(o.Tags)
	if err != nil {
		return nil, err
	}
	return append(append(args, ta...), vg+"/"+o.Origin), nil
}

// CreateSnapshot creates a thin or thick snapshot in an owned VG.
func (c *Client) CreateSnapshot(ctx context.Context, vg VG, o SnapshotOptions) error {
	o.Tags = c.id.with(o.Tags)
	return c.create(ctx, vg, o.Name, o.Args)
}

func yn(b bool) string {
	if b {
		return "y"
	}
	return "n"
}
