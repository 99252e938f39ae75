//go:build guest

package lvm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// TestGuestRAIDLegFails builds a raid1 LV over two guest disks, waits until it is in sync, then
// zeroes the head of one disk (its PV label and metadata: the disk is gone as far as lvm2 can tell):
// the report the node agent reads (vg_missing_pv_count, sync_percent, lv_health_status, from which it
// derives raidStatus) says one PV is missing and the LV partial. Before, it said in sync and healthy.
func TestGuestRAIDLegFails(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	disks := guestDisks(t, 2)
	lv := g.raid1("gleg", disks...)
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

// raid1 makes VG vg on disks and in it raid1 LV r1 of 32 MiB with one mirror (lvm2 puts its images on
// the first two disks), and returns r1 once in sync. Its cleanup, run before vgOn's, removes r1 and a
// missing PV, which vgOn's cannot.
func (g *guest) raid1(vg string, disks ...string) lvm.LV {
	g.t.Helper()
	g.sh("modprobe", "-a", "dm-raid", "raid1")
	v := g.vgOn(vg, disks...)
	g.must(g.lvm.CreateLV(g.t.Context(), v, lvm.LVOptions{Name: "r1", Size: 32 * mib, RAID: lvm.RAID1, Mirrors: 1}))
	g.t.Cleanup(func() {
		g.try("lvm", "lvremove", "-f", "-y", vg+"/r1")
		g.try("lvm", "vgreduce", "--removemissing", "--force", vg)
	})
	return g.inSync(vg, "r1")
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

// TestGuestRAIDRepair fails one leg of a raid1 LV in a VG of three disks as TestGuestRAIDLegFails
// does, repairs it onto the third disk (RepairRAID), waits for the resync and drops the missing PV
// (RemoveMissingPVs): the report says healthy and nothing missing again.
func TestGuestRAIDRepair(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	disks := guestDisks(t, 3)
	g.raid1("graid", disks...)
	// lvm2 places the two images on the first two disks (in order): fail the second.
	g.sh("dd", "if=/dev/zero", "of="+disks[1], "bs=1M", "count=1", "oflag=direct")
	if lv := g.lv("graid", "r1"); lv.HealthStatus != "partial" || g.vg("graid").MissingPVs != 1 {
		t.Fatalf("after the failure: health %q, missing PVs %d; want partial and 1", lv.HealthStatus,
			g.vg("graid").MissingPVs)
	}
	if err := g.lvm.RemoveMissingPVs(ctx, g.vg("graid")); err == nil {
		t.Fatal("RemoveMissingPVs succeeded while r1 had an image on the missing PV")
	} else {
		t.Logf("RemoveMissingPVs before the repair: %v", err)
	}
	start := time.Now()
	if err := g.lvm.RepairRAID(ctx, g.vg("graid"), "r1"); err != nil {
		t.Fatalf("RepairRAID: %v", err)
	}
	lv := g.inSync("graid", "r1")
	t.Logf("repaired and in sync again in %v: sync %v%%, health %q", time.Since(start).Round(time.Millisecond),
		lv.SyncPercent, lv.HealthStatus)
	if lv.SyncPercent != 100 || lv.HealthStatus != "" {
		t.Fatalf("after the repair: sync %v%%, health %q", lv.SyncPercent, lv.HealthStatus)
	}
	if err := g.lvm.RemoveMissingPVs(ctx, g.vg("graid")); err != nil {
		t.Fatalf("RemoveMissingPVs after the repair: %v", err)
	}
	if v := g.vg("graid"); v.MissingPVs != 0 || v.PVCount != 2 {
		t.Fatalf("after RemoveMissingPVs: %d missing of %d PVs; want 0 of 2", v.MissingPVs, v.PVCount)
	}
}

// TestGuestRAIDRefresh: a raid1 leg whose disk returns errors (its device-mapper table swapped for
// an error target) makes the PV missing and the LV partial; once the disk works again (the table
// restored) the LV reads "refresh needed" with nothing missing, and RefreshLV makes it healthy and
// in sync. The PVs are dm-linear devices over the guest disks, which lvm2 alone sees (a
// global_filter added to the guest's lvm.conf in the test's own LVM_SYSTEM_DIR).
func TestGuestRAIDRefresh(t *testing.T) {
	dir := t.TempDir()
	base, err := os.ReadFile("/etc/lvm/lvm.conf") // the guest's, for a system without udev
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.Replace(string(base), "devices {",
		`devices { global_filter = [ "a|^/dev/mapper/lvmsrefresh|", "r|.*|" ]`, 1)
	if err := os.WriteFile(filepath.Join(dir, "lvm.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	h := exec.NewHost(exec.WithEnv("LVM_SYSTEM_DIR=" + dir))
	g := &guest{t: t, host: h, lvm: lvm.New(h)}
	ctx := t.Context()
	disks := guestDisks(t, 2)
	var pvs, tables []string
	for i, d := range disks {
		name := fmt.Sprintf("lvmsrefresh%d", i)
		sectors := strings.TrimSpace(g.sh("blockdev", "--getsz", d))
		tables = append(tables, "0 "+sectors+" linear "+d+" 0")
		g.sh("dmsetup", "create", name, "--table", tables[i])
		t.Cleanup(func() { g.try("dmsetup", "remove", "--force", name) })
		pvs = append(pvs, "/dev/mapper/"+name)
	}
	g.sh("dmsetup", "mknodes")
	g.raid1("grefresh", pvs...)

	sectors := strings.Fields(tables[1])[1]
	swap := func(table string) {
		g.sh("dmsetup", "suspend", "lvmsrefresh1")
		g.sh("dmsetup", "load", "lvmsrefresh1", "--table", table)
		g.sh("dmsetup", "resume", "lvmsrefresh1")
	}
	swap("0 " + sectors + " error")
	g.sh("dd", "if=/dev/zero", "of=/dev/grefresh/r1", "bs=1M", "count=1", "oflag=direct") // md sees the errors
	if lv, v := g.lv("grefresh", "r1"), g.vg("grefresh"); lv.HealthStatus != "partial" || v.MissingPVs != 1 {
		t.Fatalf("with the leg's disk failing: health %q, %d missing PVs; want partial, 1", lv.HealthStatus,
			v.MissingPVs)
	}
	swap(tables[1])
	lv, v := g.lv("grefresh", "r1"), g.vg("grefresh")
	t.Logf("disk back: health %q, %d missing PVs", lv.HealthStatus, v.MissingPVs)
	if lv.HealthStatus != "refresh needed" || v.MissingPVs != 0 {
		t.Fatalf("with the disk back: health %q, %d missing PVs; want refresh needed, 0", lv.HealthStatus, v.MissingPVs)
	}
	g.must(g.lvm.RefreshLV(ctx, v, "r1"))
	lv = g.inSync("grefresh", "r1")
	t.Logf("after RefreshLV: health %q, sync %v%%", lv.HealthStatus, lv.SyncPercent)
	if lv.HealthStatus != "" || lv.SyncPercent != 100 {
		t.Fatalf("after RefreshLV: health %q, sync %v%%; want healthy and in sync", lv.HealthStatus, lv.SyncPercent)
	}
}
