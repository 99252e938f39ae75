package lvmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// DefaultChunkBytes is how many bytes one zeroing (blkdiscard) or copying (dd) command handles. Every
// host command runs under the executor's deadline (exec.DefaultTimeout, 5 minutes), which ends a
// command that hangs; a command over a whole volume would take longer than that on any volume
// above about 150 GiB at a few hundred MB/s, be killed and retried from the start for ever. In
// chunks of 4 GiB each command takes 4 GiB / rate: 215 s at 20 MB/s, a slow disk under load. A
// volume of any size is zeroed or copied by as many commands as it has chunks.
const DefaultChunkBytes = 4 << 30

// sectorBytes is the unit blkdiscard's offsets and lengths must be multiples of.
const sectorBytes = 512

// inChunks calls step for each range [offset, offset+length) of at most chunk bytes that together
// cover [0, size), in order, and stops at the first error.
func inChunks(size, chunk uint64, step func(offset, length uint64) error) error {
	for off := uint64(0); off < size; off += chunk {
		if err := step(off, min(chunk, size-off)); err != nil {
			return err
		}
	}
	return nil
}

// zeroRange writes zeroes over size bytes of dev (blkdiscard --zeroout, which uses the device's
// write-zeroes offload where it has one), chunk by chunk. force opens a device held by another
// (a snapshot's COW device): see zeroThick.
func (s *Service) zeroRange(ctx context.Context, dev string, size uint64, force bool) error {
	return inChunks(size, s.chunk, func(off, n uint64) error {
		args := []string{
			"--zeroout",
			"--offset",
			strconv.FormatUint(off, 10),
			"--length",
			strconv.FormatUint(n, 10),
			dev,
		}
		if force {
			args = append([]string{"--force"}, args...)
		}
		if _, err := exec.Run(ctx, s.exec, "blkdiscard", args...); err != nil {
			return fmt.Errorf("zero bytes %d-%d of %s: %w", off, off+n, dev, err)
		}
		return nil
	})
}

// copyDevice copies the whole of src into dst chunk by chunk with dd (direct I/O, each chunk synced),
// and fails when dst is smaller than src.
func (s *Service) copyDevice(ctx context.Context, src, dst string) error {
	srcSize, err := s.deviceSize(ctx, src)
	if err != nil {
		return err
	}
	dstSize, err := s.deviceSize(ctx, dst)
	if err != nil {
		return err
	}
	if dstSize < srcSize {
		return fmt.Errorf("%w: %s holds %d bytes, %s only %d", ErrInvalidArgument, src, srcSize, dst, dstSize)
	}
	return inChunks(srcSize, s.chunk, func(off, n uint64) error {
		o, c := strconv.FormatUint(off, 10), strconv.FormatUint(n, 10)
		if _, err := exec.Run(ctx, s.exec, "dd", "if="+src, "of="+dst, "bs=1M",
			"skip="+o, "seek="+o, "count="+c, "iflag=direct,skip_bytes,count_bytes", "oflag=direct,seek_bytes",
			"conv=fsync,notrunc", "status=none"); err != nil {
			return fmt.Errorf("copy bytes %d-%d of %s to %s: %w", off, off+n, src, dst, err)
		}
		return nil
	})
}

// deviceSize is the size of the block device dev in bytes (blockdev --getsize64).
func (s *Service) deviceSize(ctx context.Context, dev string) (uint64, error) {
	out, err := exec.Run(ctx, s.exec, "blockdev", "--getsize64", dev)
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", dev, err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size of %s: blockdev printed %q: %w", dev, out, err)
	}
	return n, nil
}
