//go:build guest

package lvm_test

import (
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// TestGuestRAIDLegFails builds a raid1 LV over two device-mapper legs (linear over two guest disks),
// waits until it is in sync, then swaps one leg's table for the error target and writes to the LV:
// the report the node agent reads (vg_missing_pv_count, sync_percent, lv_health_status, from which it
// TestGuestRAIDLegFails builds a raid1 LV over two guest disks, waits until it is in sync, then
// zeroes the head of one disk (its PV label and metadata: the disk is gone as far as lvm2 can tell):
// the report the node agent reads (vg_missing_pv_count, sync_percent, lv_health_status, from which it
// derives raidStatus) says one PV is missing and the LV partial. Before, it said in sync and healthy.
func TestGuestRAIDLegFails(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	g.sh("modprobe", "-a", "dm-raid", "raid1")
	disks := guestDisks(t, 2)
	vg := g.vgOn("gleg", disks...)
	if err := g.lvm.CreateLV(
		ctx,
		vg,
		lvm.LVOptions{Name: "r1", Size: 32 * mib, RAID: lvm.RAID1, Mirrors: 1},
	); err != nil {
		t.Fatal(err)
	}
	// Cleanups run last registered first: this one before vgOn's, which cannot remove a VG missing a PV.
	t.Cleanup(func() {
		g.try("lvm", "lvremove", "-f", "-y", "gleg/r1")
		g.try("lvm", "vgreduce", "--removemissing", "--force", "gleg")
	})
	lv := g.inSync("gleg", "r1")
	if lv.SyncPercent != 100 || lv.HealthStatus != "" || g.vg("gleg").MissingPVs != 0 {
		t.Fatalf("before the failure: sync %v%%, health %q, missing PVs %d", lv.SyncPercent, lv.HealthStatus,
			g.vg("gleg").MissingPVs)
	}
	g.sh("dd", "if=/dev/zero", "of="+disks[1], "bs=1M", "count=1", "oflag=direct")
	st, err := g.lvm.State(ctx, "gleg")
	if err != nil {
		t.Fatalf("the state of a VG missing a PV cannot be read: %v", err)
	}
	vgs, ok := st.VG("gleg")
	var r1 lvm.LV
	for _, l := range st.LVs {
		if l.VGName == "gleg" && l.Name == "r1" {
			r1 = l
		}
	}
	t.Logf("after the failure: VG %+v; r1 sync %v%%, health %q", vgs, r1.SyncPercent, r1.HealthStatus)
	if !ok || vgs.MissingPVs != 1 || r1.HealthStatus != "partial" {
		t.Fatalf("want 1 missing PV and r1 partial")
	}
}

// inSync waits up to a minute for the RAID LV vg/name to be fully in sync and returns it as the report
// last said.
func (g *guest) inSync(vg, name string) lvm.LV {
	g.t.Helper()
	lv := g.lv(vg, name)
	for deadline := time.Now().Add(time.Minute); lv.SyncPercent < 100 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		lv = g.lv(vg, name)
	}
	return lv
}
