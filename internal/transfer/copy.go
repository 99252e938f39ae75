package transfer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
)

// Range is a byte range of the source device.
type Range = thinmeta.Range

// Ranges lists the ranges to copy in increasing order without overlaps, calling fn for each (the
// shape of thinmeta.Reader.Allocated); fn's error ends the listing and is returned.
type Ranges func(fn func(Range) error) error

// Chunk is one piece of a transfer: the source's bytes at Offset and their SHA-256.
type Chunk struct {
	Offset uint64
	Data   []byte
	Sum    [sha256.Size]byte
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
// sink, synced and verified. Bytes counts the bytes written (a thin volume's allocated bytes), over
// all attempts; Complete is set when every range is.
type Progress struct {
	Offset   uint64
	Bytes    uint64
	Complete bool
}

// Options tune a copy; the zero value is usable.
type Options struct {
	// ChunkBytes is the most one chunk carries (default 1 MiB, a multiple of 4096; gRPC refuses
	// messages above 4 MiB by default).
	ChunkBytes uint64
	// CheckpointBytes is how much is written between checkpoints (default 256 MiB).
	CheckpointBytes uint64
	// CheckpointEvery, if set, also checkpoints the chunks written once this long has passed since
	// the last checkpoint (or the start), however few bytes they are: a copy over a slow link keeps
	// its progress through an interruption.
	CheckpointEvery time.Duration
	// Now is the clock of CheckpointEvery (default time.Now).
	Now func() time.Time
	// OnCheckpoint is told each new Progress (to persist it); its error ends the copy.
	OnCheckpoint func(Progress) error
	// Limit, if set, is waited on for every chunk.
	Limit Limiter
	// Dense asks the source (Fetch) for every byte, not only its allocated ranges: for a target whose
	// unwritten bytes do not read as zeros (a thick LV), so that none of a previous tenant's show.
	Dense bool
	// Idle ends a Fetch whose source sends nothing for this long (default DefaultIdle): a stalled
	// connection fails the attempt instead of holding it for ever.
	Idle time.Duration
}

// DefaultIdle is how long a Fetch waits for the source's next chunk by default.
const DefaultIdle = 2 * time.Minute

const (
	defaultChunk      = 1 << 20
	defaultCheckpoint = 256 << 20
	alignment         = 4096
)

var (
	// ErrCorrupt means a chunk's bytes do not match the checksum the source sent with them.
	ErrCorrupt = errors.New("chunk corrupted in transit")
	// ErrVerify means what the sink holds after a sync differs from what was written.
	ErrVerify = errors.New("sink verification failed")
	// ErrRanges means the ranges (or chunks) are not in increasing order without overlaps.
	ErrRanges = errors.New("ranges out of order")
)

func (o Options) withDefaults() (Options, error) {
	if o.ChunkBytes == 0 {
		o.ChunkBytes = defaultChunk
	}
	if o.CheckpointBytes == 0 {
		o.CheckpointBytes = defaultCheckpoint
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ChunkBytes%alignment != 0 {
		return o, fmt.Errorf("chunk size %d is not a multiple of %d", o.ChunkBytes, alignment)
	}
	return o, nil
}

// sendAhead is how many chunks Send reads ahead of what emit took: the source's disk is read while
// the chunks before are on their way.
const sendAhead = 4

// Send is the source node's side: it reads the part of ranges at or above from out of src in chunks
// of at most chunkBytes and hands each to emit, which must not keep its Data (the buffer is reused).
// Reading runs ahead of emit by up to sendAhead chunks.
func Send(ctx context.Context, ranges Ranges, from uint64, src io.ReaderAt, chunkBytes uint64,
	emit func(Chunk) error,
) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	free := make(chan []byte, sendAhead)
	for range sendAhead {
		free <- make([]byte, chunkBytes)
	}
	chunks := make(chan Chunk, sendAhead)
	read := make(chan error, 1)
	go func() {
		defer close(chunks)
		read <- readChunks(ctx, ranges, from, src, chunkBytes, free, chunks)
	}()
	for c := range chunks {
		if err := emit(c); err != nil {
			cancel()
			for range chunks { //nolint:revive // drained so that the reader ends
			}
			if rerr := <-read; rerr != nil && !errors.Is(rerr, context.Canceled) {
				return errors.Join(err, rerr)
			}
			return err
		}
		free <- c.Data[:cap(c.Data)]
	}
	return <-read
}

// readChunks reads the part of ranges at or above from out of src into buffers taken from free, and
// sends each as a chunk with its checksum on out.
func readChunks(ctx context.Context, ranges Ranges, from uint64, src io.ReaderAt, chunkBytes uint64,
	free <-chan []byte, out chan<- Chunk,
) error {
	var last uint64
	return ranges(func(r Range) error {
		if r.Offset < last {
			return fmt.Errorf("%w: %s starts before %d", ErrRanges, r, last)
		}
		last = r.End()
		for off := max(r.Offset, from); off < r.End(); off += chunkBytes {
			var buf []byte
			select {
			case <-ctx.Done():
				return ctx.Err()
			case buf = <-free:
			}
			data := buf[:min(chunkBytes, r.End()-off)]
			if err := readFull(src, data, off); err != nil {
				return fmt.Errorf("read %d+%d: %w", off, len(data), err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case out <- Chunk{Offset: off, Data: data, Sum: sha256.Sum256(data)}:
			}
		}
		return nil
	})
}

// Copy copies ranges from src to dst in one process (Send into a Receiver), starting after from (the
// Progress of an earlier attempt, or the zero Progress), and returns the Progress reached; on an
// error that is the last checkpoint.
func Copy(ctx context.Context, ranges Ranges, from Progress, src io.ReaderAt, dst Sink, o Options) (Progress, error) {
	r, err := NewReceiver(dst, from, o)
	if err != nil || from.Complete {
		return from, err
	}
	if err := Send(ctx, ranges, from.Offset, src, r.o.ChunkBytes, func(c Chunk) error {
		return r.Write(ctx, c)
	}); err != nil {
		return r.Stop(), err
	}
	return r.Finish()
}

// Receiver is the target node's side of a copy: it writes the chunks it is given into the sink and
// checkpoints. A checkpoint syncs the sink and then reads back what it covers in the background while
// the next chunks are written; the Progress moves when that read-back has verified them.
type Receiver struct {
	dst Sink
	o   Options
	// next is the lowest offset the next chunk may start at; pending are the chunks written since
	// the last checkpoint (at lastCheckpoint, or the start), with their checksums, and pendingBytes
	// their bytes; bytes counts what was written over all attempts.
	next           uint64
	pending        []written
	pendingBytes   uint64
	bytes          uint64
	lastCheckpoint time.Time
	// verifying is the result of the read-back running in the background, nil when none runs;
	// done, the Progress verified, is written by that read-back and read once it ended.
	verifying chan error
	buf       []byte
	done      Progress
}

type written struct {
	r   Range
	sum [sha256.Size]byte
}

// NewReceiver returns a Receiver writing into dst, going on from the Progress of an earlier
// attempt (or the zero Progress).
func NewReceiver(dst Sink, from Progress, o Options) (*Receiver, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("copy: %w", err)
	}
	return &Receiver{dst: dst, o: o, done: from, next: from.Offset, bytes: from.Bytes,
		buf: make([]byte, o.ChunkBytes), lastCheckpoint: o.Now()}, nil
}

// Write checks c against its checksum and writes it; chunks come in increasing order, at or after
// the Progress the receiver started from. An error of a checkpoint's read-back ends the copy at the
// next Write (or Finish).
func (r *Receiver) Write(ctx context.Context, c Chunk) error {
	rg := Range{Offset: c.Offset, Length: uint64(len(c.Data))}
	switch {
	case c.Offset < r.next:
		return fmt.Errorf("%w: chunk %s before %d", ErrRanges, rg, r.next)
	case rg.Length == 0 || rg.Length > r.o.ChunkBytes:
		return fmt.Errorf("chunk %s: length not in 1..%d", rg, r.o.ChunkBytes)
	case sha256.Sum256(c.Data) != c.Sum:
		return fmt.Errorf("%s: %w", rg, ErrCorrupt)
	}
	if err := r.verified(false); err != nil {
		return err
	}
	if r.o.Limit != nil {
		if err := r.o.Limit.WaitN(ctx, len(c.Data)); err != nil {
			return err
		}
	}
	if _, err := r.dst.WriteAt(c.Data, int64(c.Offset)); err != nil {
		return fmt.Errorf("write %s: %w", rg, err)
	}
	r.next = rg.End()
	r.pending = append(r.pending, written{r: rg, sum: c.Sum})
	r.pendingBytes += rg.Length
	r.bytes += rg.Length
	if r.pendingBytes >= r.o.CheckpointBytes ||
		(r.o.CheckpointEvery > 0 && r.o.Now().Sub(r.lastCheckpoint) >= r.o.CheckpointEvery) {
		return r.checkpoint()
	}
	return nil
}

// Finish checkpoints what is pending and marks the copy complete: call it when the source has sent
// every chunk.
func (r *Receiver) Finish() (Progress, error) {
	err := r.checkpoint()
	if err == nil {
		err = r.verified(true)
	}
	if err != nil {
		return r.Stop(), err
	}
	r.done.Complete = true
	return r.done, r.notify()
}

// Stop waits for a read-back in progress and returns the Progress verified, with every byte written
// counted: what an attempt that failed reached. The error of that read-back is dropped (its chunks
// stay unverified).
func (r *Receiver) Stop() Progress {
	_ = r.verified(true)
	p := r.done
	p.Bytes = r.bytes
	return p
}

// verified returns the error of the read-back in the background once it ended; with wait it waits
// for it, without it returns nil while it runs.
func (r *Receiver) verified(wait bool) error {
	if r.verifying == nil {
		return nil
	}
	if !wait {
		select {
		case err := <-r.verifying:
			r.verifying = nil
			return err
		default:
			return nil
		}
	}
	err := <-r.verifying
	r.verifying = nil
	return err
}

// checkpoint syncs the sink and starts the read-back of what was written since the last checkpoint
// (after the one before it ended): it checks each chunk, moves the Progress past them and tells
// OnCheckpoint.
func (r *Receiver) checkpoint() error {
	if len(r.pending) == 0 {
		return nil
	}
	if err := r.verified(true); err != nil {
		return err
	}
	if err := r.dst.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	batch, bytes := r.pending, r.bytes
	r.pending, r.pendingBytes, r.lastCheckpoint = nil, 0, r.o.Now()
	r.verifying = make(chan error, 1)
	go func() { r.verifying <- r.readBack(batch, bytes) }()
	return nil
}

// readBack reads batch back from the sink and checks it; if all is there, the Progress moves past it
// (with bytes written) and OnCheckpoint is told.
func (r *Receiver) readBack(batch []written, bytes uint64) error {
	for _, w := range batch {
		buf := r.buf[:w.r.Length]
		if err := readFull(r.dst, buf, w.r.Offset); err != nil {
			return fmt.Errorf("read back %s: %w", w.r, err)
		}
		if sha256.Sum256(buf) != w.sum {
			return fmt.Errorf("%s: %w", w.r, ErrVerify)
		}
	}
	r.done.Offset, r.done.Bytes = batch[len(batch)-1].r.End(), bytes
	return r.notify()
}

func (r *Receiver) notify() error {
	if r.o.OnCheckpoint == nil {
		return nil
	}
	return r.o.OnCheckpoint(r.done)
}
