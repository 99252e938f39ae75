//go:build guest

package lvmd_test

import (
	"math"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// thinRoom is what a thin pool may still promise, computed here from lvm2's figures on their own:
// the overprovision ratio's room (ratio × size − virtual sizes), at most ratio × the unwritten data
// space (docs/lvmd.md).
func thinRoom(pool lvm.LV, virtual uint64, ratio float64) uint64 {
	room := max(math.Floor(ratio*float64(pool.Size))-float64(virtual), 0)
	written := math.Ceil(float64(pool.Size) * pool.DataPercent / 100)
	return uint64(min(room, math.Floor(ratio*max(float64(pool.Size)-written, 0))))
}

// On real lvm2, a thin pool nearly full of data offers only the ratio times its unwritten space,
// although its volumes' virtual sizes leave the ratio room: a volume the ratio alone admits is
// refused, a smaller one is made.
func TestGuestThinCapacityFollowsData(t *testing.T) {
	g := newGuestEnv(t) // a 1 GiB pool, overprovision ratio 3
	ctx := t.Context()
	full, err := g.svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "full", DeviceClass: "thin", Size: gib})
	g.must(err)
	_, err = exec.Run(ctx, g.host, "dd", "if=/dev/zero", "of="+full.Path, "bs=4M", "count=200", "oflag=direct")
	g.must(err)
	g.must(g.svc.Refresh(ctx))

	pool, _ := g.state().LV("gvg", "pool")
	byRatio := uint64(3*gib) - gib
	want := thinRoom(pool, gib, 3)
	t.Logf("pool %d bytes, data %.2f %%: the ratio leaves %d bytes, the data %d", pool.Size, pool.DataPercent,
		byRatio, want)
	if pool.DataPercent < 75 || want >= byRatio {
		t.Fatalf("800 MiB written into a 1 GiB pool: data %.2f %%, room %d: the setup did not fill the pool",
			pool.DataPercent, want)
	}
	g.checkCapacity("800 MiB written")

	_, err = g.svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "big", DeviceClass: "thin", Size: gib})
	if !errorsIs(err, lvmd.ErrInsufficientCapacity) {
		t.Fatalf("a 1 GiB volume on a pool with %d bytes of room by data: %v, want %v", want, err,
			lvmd.ErrInsufficientCapacity)
	}
	small := want / 2 / mib * mib
	_, err = g.svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "small", DeviceClass: "thin", Size: small})
	if err != nil {
		t.Fatalf("a %d-byte volume within the room: %v", small, err)
	}
	g.checkCapacity("after the small volume")
}
