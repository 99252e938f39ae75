//go:build guest

package thinmeta_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
)

func TestGuestDeltaAndAllocated(t *testing.T) {
	for _, chunk := range []uint64{64 * kib, mib} {
		t.Run(fmt.Sprintf("chunk=%dKiB", chunk/kib), func(t *testing.T) { testDelta(t, chunk) })
	}
}

func testDelta(t *testing.T, chunk uint64) {
	g := newGuest(t)
	ctx := t.Context()
	// Hyphens prove the device-mapper name escaping (tm--vg-thin--pool-tpool).
	const vg = "tm-vg"
	g.vg(vg, guestDisks(t, 1)...)
	p := g.pool(vg, "thin-pool", "1g", chunk)
	g.thin(vg, "thin-pool", "vol", "512m")
	dev := "/dev/" + vg + "/vol"

	first := []thinmeta.Range{
		{Offset: 0, Length: 4 * kib},
		{Offset: 3*mib + 512*kib, Length: 100 * kib},
		{Offset: 100 * mib, Length: mib},
		{Offset: 300*mib - 4*kib, Length: 8 * kib}, // straddles a chunk boundary
	}
	g.write(dev, first...)
	g.snapshot(vg, "vol", "snap1")
	second := []thinmeta.Range{
		{Offset: 3*mib + 512*kib, Length: 4 * kib}, // overwrites a chunk of the first write: different
		{Offset: 200 * mib, Length: 192 * kib},     // never written before: right_only
		{Offset: 511 * mib, Length: mib},           // the last MiB
	}
	g.write(dev, second...)
	// A discarded chunk the base maps is a change too (left_only).
	discarded := thinmeta.Range{Offset: 100 * mib, Length: mib}
	g.sh("blkdiscard", "-o", fmt.Sprint(discarded.Offset), "-l", fmt.Sprint(discarded.Length), dev)
	g.snapshot(vg, "vol", "snap2")

	ts := g.lookup(vg, "snap1", "snap2")
	base, target := ts[0], ts[1]
	if base.ChunkSize != chunk || target.Pool != p || base.Origin != "vol" || target.Size != 512*mib {
		t.Fatalf("lookup = %+v", ts)
	}
	got, err := collect(func(fn func(thinmeta.Range) error) error { return g.r.Delta(ctx, base, target, fn) })
	g.notHeld(p, "Delta")
	if want := chunked(chunk, append(slices.Clone(second), discarded)...); err != nil || !slices.Equal(got, want) {
		t.Errorf("Delta(snap1, snap2) = %v, %v\nwant %v", got, err, want)
	}
	got, err = collect(func(fn func(thinmeta.Range) error) error { return g.r.Allocated(ctx, base, fn) })
	g.notHeld(p, "Allocated")
	if want := chunked(chunk, first...); err != nil || !slices.Equal(got, want) {
		t.Errorf("Allocated(snap1) = %v, %v\nwant %v", got, err, want)
	}
	// Swapped, the second write's new blocks are left_only: still changes.
	got, err = collect(func(fn func(thinmeta.Range) error) error { return g.r.Delta(ctx, target, base, fn) })
	if want := chunked(chunk, append(slices.Clone(second), discarded)...); err != nil || !slices.Equal(got, want) {
		t.Errorf("Delta(snap2, snap1) = %v, %v\nwant %v", got, err, want)
	}
	t.Logf("chunk %d KiB: delta %v", chunk/kib, got)

	checkRefusals(t, g, vg, base, target)
	checkStop(t, g, base, target)
}

// checkRefusals: a base of another volume, of another pool, or a volume that
// is not thin is refused; nothing is held afterwards.
func checkRefusals(t *testing.T, g *guest, vg string, base, target thinmeta.Thin) {
	ctx := t.Context()
	g.thin(vg, "thin-pool", "other", "64m")
	g.write("/dev/"+vg+"/other", thinmeta.Range{Length: 4 * kib})
	g.snapshot(vg, "other", "osnap")
	g.pool(vg, "pool2", "64m", 64*kib)
	g.thin(vg, "pool2", "vol2", "64m")
	g.sh("lvm", "lvcreate", "-y", "-L", "8m", "-n", "thick", vg)
	ts := g.lookup(vg, "osnap", "vol2")
	noop := func(thinmeta.Range) error { return nil }
	wantErr(t, g.r.Delta(ctx, ts[0], target, noop), thinmeta.ErrDifferentVolumes)
	wantErr(t, g.r.Delta(ctx, ts[1], target, noop), thinmeta.ErrDifferentPools)
	_, err := g.r.Lookup(ctx, vg, "snap1", "thick")
	wantErr(t, err, thinmeta.ErrNotThin)
	_, err = g.r.Lookup(ctx, vg, "missing")
	wantErr(t, err, thinmeta.ErrNotFound)
	g.notHeld(base.Pool, "refusals")

	// A thin id that the metadata snapshot does not know.
	ghost := base
	ghost.ThinID = 999
	wantErr(t, g.r.Delta(ctx, ghost, target, noop), thinmeta.ErrNotFound)
	wantErr(t, g.r.Allocated(ctx, ghost, noop), thinmeta.ErrNotFound)
	g.notHeld(base.Pool, "unknown thin id")
}

// checkStop: a callback that stops early, fails, or outlives the hold
// deadline ends the read, and the metadata snapshot is released every time.
func checkStop(t *testing.T, g *guest, base, target thinmeta.Thin) {
	ctx := t.Context()
	n := 0
	err := g.r.Delta(ctx, base, target, func(thinmeta.Range) error { n++; return thinmeta.ErrStop })
	if err != nil || n != 1 {
		t.Errorf("ErrStop: err %v after %d ranges", err, n)
	}
	g.notHeld(base.Pool, "ErrStop")
	boom := errors.New("client went away")
	wantErr(t, g.r.Allocated(ctx, base, func(thinmeta.Range) error { return boom }), boom)
	g.notHeld(base.Pool, "callback error")

	short := thinmeta.New(g.host, thinmeta.WithMaxHold(2*time.Second))
	err = short.Delta(ctx, base, target, func(thinmeta.Range) error { time.Sleep(3 * time.Second); return nil })
	wantErr(t, err, thinmeta.ErrHoldDeadline)
	g.notHeld(base.Pool, "hold deadline")

	cctx, cancel := context.WithCancel(ctx)
	err = g.r.Delta(
		cctx,
		base,
		target,
		func(thinmeta.Range) error { cancel(); time.Sleep(100 * time.Millisecond); return nil },
	)
	wantErr(t, err, context.Canceled)
	g.notHeld(base.Pool, "cancelled context")
}

// A metadata snapshot left reserved (a reader that died) blocks reads with
// ErrMetadataSnapshotHeld until Recover releases it.
func TestGuestRecover(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	const vg = "tmrec"
	g.vg(vg, guestDisks(t, 1)...)
	p := g.pool(vg, "pool", "256m", 64*kib)
	g.thin(vg, "pool", "vol", "64m")
	g.write("/dev/"+vg+"/vol", thinmeta.Range{Length: 64 * kib})
	g.snapshot(vg, "vol", "s1")
	g.snapshot(vg, "vol", "s2")
	other := g.pool(vg, "idle", "64m", 64*kib)
	g.thin(vg, "idle", "x", "64m")
	inactive := thinmeta.Pool{VG: vg, Name: "nopool"}

	released, err := g.r.Recover(ctx, p, other, inactive)
	if err != nil || len(released) != 0 {
		t.Fatalf("Recover with nothing held = %v, %v", released, err)
	}
	g.sh("dmsetup", "message", p.TPool(), "0", "reserve_metadata_snap")
	status := g.sh("dmsetup", "status", p.TPool())
	t.Logf("status while held: %s", status)
	if held, err := g.r.Held(ctx, p); err != nil || !held {
		t.Fatalf("Held = %v, %v after reserving by hand", held, err)
	}
	ts := g.lookup(vg, "s1", "s2")
	err = g.r.Delta(ctx, ts[0], ts[1], func(thinmeta.Range) error { return nil })
	wantErr(t, err, thinmeta.ErrMetadataSnapshotHeld)

	released, err = g.r.Recover(ctx, p, other, inactive)
	if err != nil || !slices.Equal(released, []thinmeta.Pool{p}) {
		t.Errorf("Recover = %v, %v; want [%s]", released, err, p)
	}
	g.notHeld(p, "Recover")
	got, err := collect(func(fn func(thinmeta.Range) error) error { return g.r.Allocated(ctx, ts[1], fn) })
	if want := []thinmeta.Range{{Length: 64 * kib}}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Allocated after Recover = %v, %v", got, err)
	}
	g.notHeld(p, "Allocated")
}
