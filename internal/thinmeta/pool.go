package thinmeta

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// dmsetup is the device-mapper tool the metadata snapshot messages go through.
const dmsetup = "dmsetup"

// Pool names a thin pool LV.
type Pool struct {
	VG   string
	Name string
}

// String renders p as vg/pool.
func (p Pool) String() string { return p.VG + "/" + p.Name }

func (p Pool) validate() error {
	if err := lvm.ValidName(p.VG); err != nil {
		return fmt.Errorf("%w: pool %s: %w", ErrInvalidArgument, p, err)
	}
	if err := lvm.ValidName(p.Name); err != nil {
		return fmt.Errorf("%w: pool %s: %w", ErrInvalidArgument, p, err)
	}
	return nil
}

// dmName is lvm2's device-mapper name of LV lv in VG vg: each '-' in a name
// doubled, joined by '-' (lvm2 lib/activate/dev_manager.c dm_build_dm_name).
func dmName(vg, lv string) string {
	return strings.ReplaceAll(vg, "-", "--") + "-" + strings.ReplaceAll(lv, "-", "--")
}

// TPool is the device-mapper name of the pool's thin-pool target, the
// device the metadata snapshot messages go to: <vg>-<pool>-tpool.
func (p Pool) TPool() string { return dmName(p.VG, p.Name) + "-tpool" }

// TMeta is the path of the pool's metadata device (the hidden <pool>_tmeta
// LV) that thin_delta and thin_dump read.
func (p Pool) TMeta() string { return "/dev/mapper/" + dmName(p.VG, p.Name+"_tmeta") }

// PoolStatus is what `dmsetup status` says of a thin-pool target.
type PoolStatus struct {
	// HeldRoot is the metadata block of the held metadata snapshot, "" when
	// none is held (the kernel prints "-").
	HeldRoot string
	// Fields is the whole status line split at spaces.
	Fields []string
}

// Held reports whether a metadata snapshot is held.
func (s PoolStatus) Held() bool { return s.HeldRoot != "" }

// ParsePoolStatus parses one `dmsetup status <dev>` line of a thin-pool
// target: "<start> <len> thin-pool <transaction id> <used>/<total metadata
// blocks> <used>/<total data blocks> <held metadata root> ro|rw|... "
// (Documentation/admin-guide/device-mapper/thin-provisioning.rst). A failed
// pool prints "Fail" instead of the transaction id.
func ParsePoolStatus(line string) (PoolStatus, error) {
	f := strings.Fields(line)
	if len(f) < 4 || f[2] != "thin-pool" {
		return PoolStatus{}, fmt.Errorf("%w: not a thin-pool status: %q", ErrMalformed, line)
	}
	if f[3] == "Fail" || f[3] == "Error" || len(f) < 7 {
		return PoolStatus{}, fmt.Errorf("thin pool status %q: %w", line, ErrPoolInactive)
	}
	s := PoolStatus{Fields: f}
	if f[6] != "-" {
		s.HeldRoot = f[6]
	}
	return s, nil
}

// status reads the pool's thin-pool status.
func (r *Reader) status(ctx context.Context, p Pool) (PoolStatus, error) {
	var st PoolStatus
	err := r.exec.Exec(
		ctx,
		exec.Cmd{Name: dmsetup, Args: []string{"status", p.TPool()}, Stdout: func(rd io.Reader) error {
			line, err := bufio.NewReader(rd).ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			st, err = ParsePoolStatus(line)
			return err
		}},
	)
	if exec.StderrContains(err, "does not exist", "no such device") {
		return st, fmt.Errorf("pool %s (device %s): %w", p, p.TPool(), ErrPoolInactive)
	}
	if err != nil {
		return st, fmt.Errorf("status of pool %s: %w", p, err)
	}
	return st, nil
}

// message sends a thin-pool message (reserve_metadata_snap,
// release_metadata_snap) to the pool.
func (r *Reader) message(ctx context.Context, p Pool, msg string) error {
	_, err := exec.Run(ctx, r.exec, dmsetup, "message", p.TPool(), "0", msg)
	return err
}

// reserve takes the pool's metadata snapshot.
func (r *Reader) reserve(ctx context.Context, p Pool) error {
	err := r.message(ctx, p, "reserve_metadata_snap")
	switch {
	case err == nil:
		return nil
	case exec.StderrContains(err, "resource busy"):
		// The kernel refuses a second one with EBUSY.
		return fmt.Errorf("reserve metadata snapshot of pool %s: %w (release a stale one with Recover): %w",
			p, ErrMetadataSnapshotHeld, err)
	case exec.StderrContains(err, "does not exist", "no such device"):
		return fmt.Errorf("reserve metadata snapshot of pool %s: %w: %w", p, ErrPoolInactive, err)
	}
	return fmt.Errorf("reserve metadata snapshot of pool %s: %w", p, err)
}

// release drops the pool's metadata snapshot. It runs on a context of its
// own so a cancelled or expired read still releases.
func (r *Reader) release(ctx context.Context, p Pool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.releaseTimeout)
	defer cancel()
	if err := r.message(ctx, p, "release_metadata_snap"); err != nil {
		return fmt.Errorf("release metadata snapshot of pool %s: %w", p, err)
	}
	return nil
}

// Recover releases the metadata snapshot each of pools holds, if any: one
// is only ever left behind when a reader died while holding it, so call it
// when the agent starts, for the thin pools of its device classes only (a
// pool of someone else's may hold a snapshot for its own reader). Inactive
// pools are skipped (the kernel keeps the hold in the on-disk superblock, so
// Recover again once the pool is activated). It returns the pools released.
func (r *Reader) Recover(ctx context.Context, pools ...Pool) ([]Pool, error) {
	var released []Pool
	var errs []error
	for _, p := range pools {
		ok, err := r.recover(ctx, p)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			released = append(released, p)
		}
	}
	return released, errors.Join(errs...)
}

func (r *Reader) recover(ctx context.Context, p Pool) (bool, error) {
	if err := p.validate(); err != nil {
		return false, err
	}
	unlock, err := r.locks.lock(ctx, p)
	if err != nil {
		return false, fmt.Errorf("recover pool %s: %w", p, err)
	}
	defer unlock()
	st, err := r.status(ctx, p)
	if errors.Is(err, ErrPoolInactive) {
		return false, nil
	}
	if err != nil || !st.Held() {
		return false, err
	}
	if err := r.release(ctx, p); err != nil {
		return false, fmt.Errorf("recover: %w", err)
	}
	return true, nil
}

// Held reports whether pool p holds a metadata snapshot now.
func (r *Reader) Held(ctx context.Context, p Pool) (bool, error) {
	if err := p.validate(); err != nil {
		return false, err
	}
	st, err := r.status(ctx, p)
	return st.Held(), err
}

// poolLocks serialises metadata snapshots per pool: the kernel allows one per
// pool. Waiting honours the context.
type poolLocks struct {
	mu    sync.Mutex
	pools map[string]chan struct{}
}

func (l *poolLocks) lock(ctx context.Context, p Pool) (func(), error) {
	l.mu.Lock()
	if l.pools == nil {
		l.pools = map[string]chan struct{}{}
	}
	ch, ok := l.pools[p.TPool()]
	if !ok {
		ch = make(chan struct{}, 1)
		l.pools[p.TPool()] = ch
	}
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for pool %s: %w", p, context.Cause(ctx))
	}
}
