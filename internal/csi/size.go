package csi

import (
	"errors"
	"fmt"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
)

// Size units and rules.
const (
	MiB = int64(1) << 20
	GiB = int64(1) << 30

	// DefaultSize is the size of a volume whose request names no required bytes.
	DefaultSize = 1 * GiB
	// SizeAlignment is the granularity sizes are rounded up to (lvm2 rounds further, to whole extents).
	SizeAlignment = int64(4096)

	// MinSizeBlock is the smallest raw block volume.
	MinSizeBlock = 8 * MiB
	// MinSizeExt4 is the smallest ext4 volume.
	MinSizeExt4 = 32 * MiB
	// MinSizeXFS is the smallest xfs volume (mkfs.xfs refuses smaller filesystems).
	MinSizeXFS = 300 * MiB
	// MinSizeBtrfs is the smallest btrfs volume.
	MinSizeBtrfs = 200 * MiB
)

// ErrOutOfRange is wrapped when a capacity range cannot be satisfied.
var ErrOutOfRange = errors.New("capacity range cannot be satisfied")

// MinimumSize returns the smallest volume for a raw block volume (block) or the filesystem fsType.
func MinimumSize(fsType string, block bool) int64 {
	if block {
		return MinSizeBlock
	}
	switch fsType {
	case FSXFS:
		return MinSizeXFS
	case FSBtrfs:
		return MinSizeBtrfs
	default:
		return MinSizeExt4
	}
}

// RoundUp rounds size up to a multiple of SizeAlignment.
func RoundUp(size int64) int64 {
	return (size + SizeAlignment - 1) / SizeAlignment * SizeAlignment
}

// RequestedSize turns a CSI capacity range into the size to allocate: required bytes (DefaultSize when
// zero, capped by the limit), raised to minimum, rounded up to SizeAlignment. It fails with ErrOutOfRange
// when the result exceeds the limit.
func RequestedSize(r *spec.CapacityRange, minimum int64) (int64, error) {
	req, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	switch {
	case req < 0 || limit < 0:
		return 0, fmt.Errorf("%w: negative bytes (required %d, limit %d)", ErrOutOfRange, req, limit)
	case limit > 0 && req > limit:
		return 0, fmt.Errorf("%w: required %d bytes exceed the limit of %d", ErrOutOfRange, req, limit)
	}
	if req == 0 {
		req = DefaultSize
		if limit > 0 && limit < req {
			req = limit
		}
	}
	size := RoundUp(max(req, minimum))
	if limit > 0 && size > limit {
		return 0, fmt.Errorf("%w: limit %d bytes is below %d bytes (minimum %d, rounded to %d)",
			ErrOutOfRange, limit, size, minimum, SizeAlignment)
	}
	return size, nil
}

// WithinLimit reports whether an existing volume of size bytes satisfies r.
func WithinLimit(size int64, r *spec.CapacityRange) bool {
	if size < r.GetRequiredBytes() {
		return false
	}
	return r.GetLimitBytes() == 0 || size <= r.GetLimitBytes()
}
