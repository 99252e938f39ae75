package transfer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
)

// Range is a byte range of the source device.
type Range = thinmeta.Range

// Ranges lists the ranges to copy in increasing order without overlaps, calling fn for each (the
// shape of thinmeta.Reader.Allocated); fn's error ends the listing and is returned.
type Ranges func(fn func(Range) error) error

// Source is the source node's side of a copy: ReadChunk reads r (at most the chunk size) into buf
// and returns the bytes with their SHA-256.
type Source interface {
	ReadChunk(ctx context.Context, r Range, buf []byte) ([]byte, [sha256.Size]byte, error)
}

// Sink is the target node's side of a copy: the device written, read back to verify, and synced.
type Sink interface {
	WriteAt(p []byte, off int64) (int, error)
	ReadAt(p []byte, off int64) (int, error)
	Sync() error
}

// Limiter paces a copy: WaitN blocks until n more bytes may move (golang.org/x/time/rate.Limiter; a
// node's bandwidth limit, shared by its copies).
type Limiter interface {
	WaitN(ctx context.Context, n int) error
}

// Progress is how far a copy got: every byte below Offset that the copy's ranges cover is in the
// sink, synced and verified. Bytes counts the bytes copied (a thin volume's allocated bytes), over
// all attempts; Complete is set when every range is.
type Progress struct {
	Offset   uint64
	Bytes    uint64
	Complete bool
}

// Options tune a copy; the zero value is usable.
type Options struct {
	// ChunkBytes is the most one read and one write move (default 4 MiB, a multiple of 4096).
	ChunkBytes uint64
	// CheckpointBytes is how much is copied between checkpoints (default 256 MiB).
	CheckpointBytes uint64
	// OnCheckpoint is told each new Progress (to persist it); its error ends the copy.
	OnCheckpoint func(Progress) error
	// Limit, if set, is waited on for every chunk.
	Limit Limiter
}

const (
	defaultChunk      = 4 << 20
	defaultCheckpoint = 256 << 20
	alignment         = 4096
)

var (
	// ErrCorrupt means a chunk's bytes do not match the checksum the source sent with them.
	ErrCorrupt = errors.New("chunk corrupted in transit")
	// ErrVerify means what the sink holds after a sync differs from what was written.
	ErrVerify = errors.New("sink verification failed")
	// ErrRanges means the ranges are not in increasing order without overlaps.
	ErrRanges = errors.New("ranges out of order")
)

// Copy copies ranges from src to dst, starting after from (the Progress of an earlier attempt, or
// the zero Progress), and returns the Progress reached; on an error that is the last checkpoint.
func Copy(ctx context.Context, ranges Ranges, from Progress, src Source, dst Sink, o Options) (Progress, error) {
	if o.ChunkBytes == 0 {
		o.ChunkBytes = defaultChunk
	}
	if o.CheckpointBytes == 0 {
		o.CheckpointBytes = defaultCheckpoint
	}
	if o.ChunkBytes%alignment != 0 {
		return from, fmt.Errorf("copy: chunk size %d is not a multiple of %d", o.ChunkBytes, alignment)
	}
	c := &copier{src: src, dst: dst, o: o, done: from, buf: make([]byte, o.ChunkBytes)}
	if from.Complete {
		return from, nil
	}
	if err := ranges(func(r Range) error { return c.copyRange(ctx, r) }); err != nil {
		return c.done, err
	}
	if err := c.checkpoint(); err != nil {
		return c.done, err
	}
	c.done.Complete = true
	return c.done, c.notify()
}

// copier is one run of Copy.
type copier struct {
	src  Source
	dst  Sink
	o    Options
	buf  []byte
	done Progress
	// last is the end of the last range listed; pending are the chunks written since the last
	// checkpoint, with their checksums, and pendingBytes their bytes.
	last         uint64
	pending      []written
	pendingBytes uint64
}

type written struct {
	r   Range
	sum [sha256.Size]byte
}

// copyRange copies the part of r at or above the Progress the copy started from, chunk by chunk.
func (c *copier) copyRange(ctx context.Context, r Range) error {
	if r.Offset < c.last {
		return fmt.Errorf("%w: %s starts before %d", ErrRanges, r, c.last)
	}
	c.last = r.End()
	if r.End() <= c.done.Offset {
		return nil
	}
	if r.Offset < c.done.Offset {
		r = Range{Offset: c.done.Offset, Length: r.End() - c.done.Offset}
	}
	for off := r.Offset; off < r.End(); off += c.o.ChunkBytes {
		chunk := Range{Offset: off, Length: min(c.o.ChunkBytes, r.End()-off)}
		if err := c.copyChunk(ctx, chunk); err != nil {
			return err
		}
	}
	return nil
}

// copyChunk moves one chunk and checkpoints when enough is pending.
func (c *copier) copyChunk(ctx context.Context, r Range) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, sum, err := c.src.ReadChunk(ctx, r, c.buf)
	if err != nil {
		return fmt.Errorf("read %s: %w", r, err)
	}
	if uint64(len(data)) != r.Length || sha256.Sum256(data) != sum {
		return fmt.Errorf("%s: %w", r, ErrCorrupt)
	}
	if c.o.Limit != nil {
		if err := c.o.Limit.WaitN(ctx, len(data)); err != nil {
			return err
		}
	}
	if _, err := c.dst.WriteAt(data, int64(r.Offset)); err != nil {
		return fmt.Errorf("write %s: %w", r, err)
	}
	c.pending = append(c.pending, written{r: r, sum: sum})
	c.pendingBytes += r.Length
	c.done.Bytes += r.Length
	if c.pendingBytes >= c.o.CheckpointBytes {
		return c.checkpoint()
	}
	return nil
}

// checkpoint syncs the sink, reads back and checks what was written since the last checkpoint,
// and moves the Progress past it.
func (c *copier) checkpoint() error {
	if len(c.pending) == 0 {
		return nil
	}
	if err := c.dst.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	for _, w := range c.pending {
		buf := c.buf[:w.r.Length]
		if err := readFull(c.dst, buf, w.r.Offset); err != nil {
			return fmt.Errorf("read back %s: %w", w.r, err)
		}
		if sha256.Sum256(buf) != w.sum {
			return fmt.Errorf("%s: %w", w.r, ErrVerify)
		}
	}
	c.done.Offset = c.pending[len(c.pending)-1].r.End()
	c.pending, c.pendingBytes = c.pending[:0], 0
	return c.notify()
}

func (c *copier) notify() error {
	if c.o.OnCheckpoint == nil {
		return nil
	}
	return c.o.OnCheckpoint(c.done)
}
