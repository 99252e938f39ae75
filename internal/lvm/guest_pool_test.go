//go:build guest

package lvm_test

import (
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// TestGuestRemoveThinPoolKeepsThinVolumes: removing a pool that a thin LV uses, active or not, fails
// and the thin LV survives (teardown checks for LVs first, but one may be created in between); a pool
// without users is removed.
func TestGuestRemoveThinPoolKeepsThinVolumes(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	vg := g.vgOn("gpoolrm", guestDisks(t, 1)...)
	g.must(g.lvm.CreateThinPool(ctx, vg, lvm.ThinPoolOptions{Name: "pool", Extents: lvm.PercentOf(50, "FREE")}))
	g.must(g.lvm.CreateThinLV(ctx, vg, lvm.ThinLVOptions{Name: "tenant", Pool: "pool", VirtualSize: 64 * mib}))

	if err := g.lvm.RemoveThinPool(ctx, vg, "pool"); err == nil {
		t.Fatal("removed a thin pool with an active thin LV")
	} else {
		t.Logf("refused (active thin LV): %v", err)
	}
	g.lv("gpoolrm", "tenant")

	g.sh("lvm", "lvchange", "-an", "gpoolrm/tenant")
	if err := g.lvm.RemoveThinPool(ctx, vg, "pool"); err == nil {
		t.Fatal("removed a thin pool with an inactive thin LV")
	} else {
		t.Logf("refused (inactive thin LV): %v", err)
	}
	g.lv("gpoolrm", "tenant")

	g.must(g.lvm.RemoveLV(ctx, vg, "tenant"))
	g.must(g.lvm.RemoveThinPool(ctx, vg, "pool"))
	if lvs := g.state().LVsOf("gpoolrm"); len(lvs) != 0 {
		t.Errorf("LVs left: %+v", lvs)
	}
}
