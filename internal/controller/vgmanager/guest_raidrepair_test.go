//go:build guest

package vgmanager_test

import (
	"strings"
	"testing"
	"time"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// TestGuestRAIDAutoRepair walks a raid1 device class through a disk failure on real lvm2, as the
// agent sees it on its passes: healthy on three disks; a leg's disk fails (its PV label zeroed,
// then hidden from the inventory as a disk that is gone): within the repair delay the status says
// when the repair begins; after it, with the third disk full, the status says what to do; in
// both cases nothing changes; lvm2 refuses new volumes meanwhile; a blank disk
// listed in optionalPaths appears: the manager adds it, rebuilds the lost image on it, drops the
// missing disk, and the class is healthy and takes new volumes again.
func TestGuestRAIDAutoRepair(t *testing.T) {
	d := guestDisks(t)
	a, b, full, spare := d[0], d[1], d[2], d[3]
	const vg = "graid"
	g := newGuest(t, []string{vg}, d[:4])
	g.sh("modprobe", "-a", "dm-raid", "raid1")
	spec := lvmv1alpha1.LVMVolumeGroupSpec{
		RAIDConfig: &lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1},
		DeviceSelector: &lvmv1alpha1.DeviceSelector{
			Paths:         []lvmv1alpha1.DevicePath{lvmv1alpha1.DevicePath(a), lvmv1alpha1.DevicePath(b)},
			OptionalPaths: []lvmv1alpha1.DevicePath{lvmv1alpha1.DevicePath(full), lvmv1alpha1.DevicePath(spare)},
		},
	}
	in := vgmanager.Input{Name: vg, Spec: spec, NodeName: "guest"}
	g.disks.visible = []string{a, b, full}
	if out := g.reconcile(in); out.Status.Status != lvmv1alpha1.VGStatusReady ||
		out.Status.RAIDStatus == nil || out.Status.RAIDStatus.Status != lvmv1alpha1.RAIDHealthy {
		t.Fatalf("created: %+v", out.Status)
	}
	g.sh("lvm", "lvcreate", "-y", "-n", "filler", "-l", "100%PVS", vg, full) // no room for a repair there
	g.sh("lvm", "lvcreate", "-y", "--type", "raid1", "-m", "1", "-L", "64m", "-n", "r1", vg, a, b)
	g.waitInSync(vg, "r1")

	g.sh("dd", "if=/dev/zero", "of="+b, "bs=1M", "count=1", "oflag=direct")
	g.disks.visible = []string{a, full}
	before := g.sh("lvm", lvm.ReportArgs()...)
	in.RepairDelay = time.Hour // as the agent does (5 minutes there): first the disk may come back
	out := g.reconcile(in)
	waits := strings.Contains(out.Status.Reason, "unless it comes back")
	if out.Status.Status != lvmv1alpha1.VGStatusDegraded || !waits {
		t.Fatalf("after the failure, within the repair delay: %+v", out.Status)
	}
	in.RepairDelay = 0
	out = g.reconcile(in)
	rs := out.Status.RAIDStatus
	noRoom := strings.Contains(out.Status.Reason, "no room to repair RAID LV r1")
	if out.Status.Status != lvmv1alpha1.VGStatusDegraded || !noRoom || rs == nil ||
		rs.Status != lvmv1alpha1.RAIDDegraded || rs.DegradedMemberCount != 1 {
		t.Fatalf("after the failure, without room: %+v", out.Status)
	}
	t.Logf("without room: %s; raidStatus %s, %d of %d members missing", out.Status.Reason, rs.Status,
		rs.DegradedMemberCount, rs.MemberCount)
	if after := g.sh("lvm", lvm.ReportArgs()...); after != before {
		t.Fatalf("a pass without room changed the LVM state:\nbefore %s\nafter  %s", before, after)
	}
	v, _ := g.state(vg)
	err := g.lvm.CreateLV(t.Context(), v, lvm.LVOptions{Name: "new", Size: 8 << 20, RAID: lvm.RAID1, Mirrors: 1})
	if !lvm.IsMissingPVs(err) {
		t.Fatalf("lvcreate with a missing PV: %v, want lvm2's refusal classified as ErrMissingPVs", err)
	}

	g.disks.visible = []string{a, full, spare}
	start := time.Now()
	out = g.reconcile(in)
	t.Logf(
		"with the spare: %s %q in %v",
		out.Status.Status,
		out.Status.Reason,
		time.Since(start).Round(time.Millisecond),
	)
	r1 := g.waitInSync(vg, "r1")
	s, err := g.lvm.StateAll(t.Context(), vg) // with the images
	if err != nil {
		t.Fatal(err)
	}
	v, _ = s.VG(vg)
	t.Logf("r1 in sync %v after the repair began: health %q, images on %v", time.Since(start).Round(time.Millisecond),
		r1.HealthStatus, imagePVs(s, "r1"))
	if v.MissingPVs != 0 || v.PVCount != 3 || r1.HealthStatus != "" ||
		!sortedEqual(imagePVs(s, "r1"), []string{a, spare}) {
		t.Fatalf("after the repair: VG %d missing of %d PVs, r1 health %q on %v; want 0 of 3, healthy on %s and %s",
			v.MissingPVs, v.PVCount, r1.HealthStatus, imagePVs(s, "r1"), a, spare)
	}
	out = g.reconcile(in)
	if rs := out.Status.RAIDStatus; out.Status.Status != lvmv1alpha1.VGStatusReady || rs == nil ||
		rs.Status != lvmv1alpha1.RAIDHealthy || rs.MemberCount != 3 || rs.DegradedMemberCount != 0 {
		t.Fatalf("after the repair: %+v, raidStatus %+v", out.Status, rs)
	}
	if err := g.lvm.CreateLV(t.Context(), v, lvm.LVOptions{Name: "new", Size: 8 << 20, RAID: lvm.RAID1,
		Mirrors: 1}); err != nil {
		t.Fatalf("a new RAID LV after the repair: %v", err)
	}
}

// waitInSync waits (up to 2 minutes) for RAID LV vg/lv to be fully in sync and returns it.
func (g *guest) waitInSync(vg, name string) lvm.LV {
	g.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, s := g.state(vg)
		lv, ok := s.LV(vg, name)
		if !ok {
			g.t.Fatalf("LV %s/%s is gone", vg, name)
		}
		if lv.SyncPercent >= 100 {
			return lv
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("LV %s/%s at %v%% of its sync after 2 minutes", vg, name, lv.SyncPercent)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// imagePVs lists the PVs of RAID LV name's image sub-LVs.
func imagePVs(s *lvm.State, name string) []string {
	var out []string
	for _, lv := range s.LVs {
		if lv.Hidden && strings.HasPrefix(lv.Name, name+"_rimage_") {
			out = append(out, lv.PVNames()...)
		}
	}
	return out
}
