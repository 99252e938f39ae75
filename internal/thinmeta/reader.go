package thinmeta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// Tools of thin-provisioning-tools (0.9.0 verified).
const (
	thinDelta = "thin_delta"
	thinDump  = "thin_dump"
)

// Defaults of a Reader.
const (
	// DefaultMaxHold bounds how long a metadata snapshot is held for one
	// read. Holding one does not block IO, but every metadata change of the
	// pool is copied while it is held.
	DefaultMaxHold = 2 * time.Minute
	// DefaultReleaseTimeout bounds the release message.
	DefaultReleaseTimeout = 30 * time.Second
)

// Reader reads thin pool metadata. It is safe for concurrent use; reads of
// one pool run one at a time.
type Reader struct {
	exec           exec.Executor
	lvm            *lvm.Client
	maxHold        time.Duration
	releaseTimeout time.Duration
	locks          *poolLocks
}

// Option configures a Reader.
type Option func(*Reader)

// WithMaxHold sets how long a metadata snapshot may be held for one read.
func WithMaxHold(d time.Duration) Option { return func(r *Reader) { r.maxHold = d } }

// WithLVMConfig sets configuration the Reader's lvm2 commands run with (the kubelet loop devices'
// filter, devices.LoopFilter.Config).
func WithLVMConfig(f lvm.ConfigFunc) Option { return func(r *Reader) { r.lvm = r.lvm.WithConfig(f) } }

// New returns a Reader running its commands through e.
func New(e exec.Executor, opts ...Option) *Reader {
	r := &Reader{exec: e, lvm: lvm.New(e), maxHold: DefaultMaxHold, releaseTimeout: DefaultReleaseTimeout,
		locks: &poolLocks{}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Delta calls fn with the byte ranges that differ between thin volumes base
// and target (two snapshots of one volume, base the older), in increasing
// order, adjacent ranges merged, in units of the pool's chunk size. Blocks
// mapped by only one of them count as changed. Look both up with Lookup
// first. A callback error ends the listing and is returned (ErrStop: nil).
func (r *Reader) Delta(ctx context.Context, base, target Thin, fn func(Range) error) error {
	if err := checkPair(base, target); err != nil {
		return err
	}
	args := []string{"--metadata-snap", "--snap1", strconv.FormatUint(base.ThinID, 10),
		"--snap2", strconv.FormatUint(target.ThinID, 10), target.Pool.TMeta()}
	err := r.read(ctx, target.Pool, thinDelta, args, func(rd io.Reader) error {
		return DecodeDelta(rd, target.ChunkSize, fn)
	})
	if err != nil {
		return fmt.Errorf("delta of %s from %s: %w", target, base, err)
	}
	return nil
}

// Allocated calls fn with the byte ranges thin volume lv maps (has data
// for), in increasing order, adjacent ranges merged, in units of the pool's
// chunk size. A callback error ends the listing and is returned (ErrStop:
// nil).
func (r *Reader) Allocated(ctx context.Context, lv Thin, fn func(Range) error) error {
	if err := lv.check(); err != nil {
		return err
	}
	args := []string{"--metadata-snap", "--dev-id", strconv.FormatUint(lv.ThinID, 10), lv.Pool.TMeta()}
	err := r.read(ctx, lv.Pool, thinDump, args, func(rd io.Reader) error {
		return DecodeMappings(rd, lv.ThinID, lv.ChunkSize, fn)
	})
	if err != nil {
		return fmt.Errorf("allocated ranges of %s: %w", lv, err)
	}
	return nil
}

// read runs tool with args over a metadata snapshot of pool p, streaming
// its output to decode. The snapshot is reserved under the pool's lock,
// held at most maxHold and always released.
func (r *Reader) read(
	ctx context.Context,
	p Pool,
	tool string,
	args []string,
	decode func(io.Reader) error,
) (err error) {
	unlock, err := r.locks.lock(ctx, p)
	if err != nil {
		return err
	}
	defer unlock()
	hold, cancel := context.WithTimeoutCause(ctx, r.maxHold,
		fmt.Errorf("%w (%s)", ErrHoldDeadline, r.maxHold))
	defer cancel()
	if err := r.reserve(hold, p); err != nil {
		return err
	}
	defer func() {
		if rerr := r.release(ctx, p); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	// A callback error kills the tool at once (its process group) instead of
	// letting the executor drain the rest of its output. Malformed output is
	// left to run out: the tool's own failure explains it better.
	run, stop := context.WithCancelCause(hold)
	defer stop(nil)
	var decodeErr error
	err = r.exec.Exec(run, exec.Cmd{Name: tool, Args: args, Stdout: func(rd io.Reader) error {
		decodeErr = decode(rd)
		if decodeErr != nil && !errors.Is(decodeErr, ErrMalformed) {
			stop(decodeErr)
		}
		return decodeErr
	}})
	return toolError(hold, err, decodeErr)
}

// toolError picks the error a read reports: the callback's, the deadline's,
// the tool's own failure, then malformed output.
func toolError(hold context.Context, err, decodeErr error) error {
	switch {
	case errors.Is(decodeErr, ErrStop):
		return nil
	case decodeErr != nil && !errors.Is(decodeErr, ErrMalformed):
		return decodeErr
	case err != nil && hold.Err() != nil:
		return fmt.Errorf("%w: %w", context.Cause(hold), err)
	case exec.StderrContains(err, "unable to find mapping tree"):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case exec.ExitCode(err) > 0:
		return err
	case decodeErr != nil:
		return decodeErr
	}
	return err
}
