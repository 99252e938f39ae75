//go:build guest

package lvm_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

func TestGuestThickVolumesAndState(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	disks := guestDisks(t, 3)
	vg := g.vgOn("gthick", disks[0], disks[1])
	if !vg.Owned() || vg.PVCount != 2 || vg.ExtentSize == 0 {
		t.Fatalf("new VG = %+v", vg)
	}

	g.must(g.lvm.CreateLV(ctx, vg, lvm.LVOptions{Name: "lin", Size: 100 * mib, Tags: []string{"pvc-1"}}))
	g.must(g.lvm.CreateLV(ctx, vg, lvm.LVOptions{Name: "str", Size: 100 * mib, Stripes: 2, StripeSize: "64k"}))

	var s *lvm.State
	var reads []time.Duration
	for i := range 5 {
		reads = append(reads, timed(t, fmt.Sprintf("state read #%d", i), func() error {
			var err error
			s, err = g.lvm.State(ctx)
			return err
		}))
	}
	t.Logf("TIMING state read median of 5: %v", median(reads).Round(time.Millisecond))

	lin, _ := s.LV("gthick", "lin")
	if lin.Size != 100*mib || lin.SegType() != "linear" || !lin.Attr.Active() ||
		!slices.Equal(lin.Tags, []string{"pvc-1"}) ||
		lin.Path != "/dev/gthick/lin" ||
		len(lin.PVNames()) != 1 {
		t.Errorf("lin = %+v", lin)
	}
	str, _ := s.LV("gthick", "str")
	if str.Size < 100*mib || str.Size >= 100*mib+2*vg.ExtentSize || str.SegType() != "striped" ||
		str.Segments[0].Stripes != 2 || str.Segments[0].StripeSize != 64<<10 || len(str.PVNames()) != 2 {
		t.Errorf("str = %+v", str)
	}
	vgNow, _ := s.VG("gthick")
	if vgNow.Free != vgNow.Size-lin.Size-str.Size {
		t.Errorf("VG free %d != size %d - %d - %d", vgNow.Free, vgNow.Size, lin.Size, str.Size)
	}
	for _, pv := range s.PVsOf("gthick") {
		if pv.DevSize != 2*gib || pv.Size > pv.DevSize {
			t.Errorf("pv = %+v", pv)
		}
	}

	// Activation.
	g.must(g.lvm.ActivateLV(ctx, vg, "lin", lvm.ActivateOptions{Active: false}))
	if g.lv("gthick", "lin").Attr.Active() {
		t.Error("lin still active after lvchange -an")
	}
	g.must(g.lvm.ActivateVG(ctx, vg, true))
	if !g.lv("gthick", "lin").Attr.Active() {
		t.Error("lin inactive after vgchange -ay")
	}

	checkTypedErrors(t, g, vg)
	checkGrowShrink(t, g, vg, disks[2])

	// Teardown through the API: vgremove refuses while LVs exist.
	if err := g.lvm.RemoveVG(ctx, vg); err == nil {
		t.Fatal("vgremove of a VG with LVs succeeded")
	}
	g.must(g.lvm.RemoveLV(ctx, vg, "lin"))
	g.must(g.lvm.RemoveLV(ctx, vg, "str"))
	g.must(g.lvm.RemoveVG(ctx, vg))
	s = g.state()
	if _, ok := s.VG("gthick"); ok {
		t.Error("VG still present after vgremove")
	}
	for _, d := range disks[:2] {
		orphan, ok := s.PV(d)
		if !ok || !orphan.Orphan() {
			t.Errorf("%s after vgremove: %+v %t", d, orphan, ok)
			continue
		}
		g.must(g.lvm.RemovePV(ctx, orphan))
	}
}

func checkTypedErrors(t *testing.T, g *guest, vg lvm.VG) {
	t.Helper()
	ctx := t.Context()
	// Typed errors.
	err := g.lvm.RemoveLV(ctx, vg, "nope")
	if !lvm.IsNotFound(err) {
		t.Errorf("remove missing LV: %v", err)
	}
	t.Logf("missing LV: %v", err)
	if err := g.lvm.ExtendLV(ctx, vg, "nope", lvm.ExtendOptions{Size: gib}); !lvm.IsNotFound(err) {
		t.Errorf("extend missing LV: %v", err)
	}
	if _, err := g.lvm.State(ctx, "nosuchvg"); !lvm.IsNotFound(err) {
		t.Errorf("state of missing VG: %v", err)
	}
	err = g.lvm.CreateLV(ctx, vg, lvm.LVOptions{Name: "huge", Size: 10 * gib})
	if !errors.Is(err, lvm.ErrInsufficientSpace) {
		t.Errorf("oversized lvcreate: %v", err)
	}
	t.Logf("oversized lvcreate: %v", err)
	if err := g.lvm.CreateLV(ctx, vg, lvm.LVOptions{Name: "lin", Size: mib}); !lvm.IsAlreadyExists(err) {
		t.Errorf("duplicate lvcreate: %v", err)
	}
	if err := g.lvm.ExtendLV(ctx, vg, "lin", lvm.ExtendOptions{Size: 100 * mib}); err != nil {
		t.Errorf("extend to the current size: %v", err)
	}
}

func checkGrowShrink(t *testing.T, g *guest, vg lvm.VG, disk string) {
	t.Helper()
	ctx := t.Context()
	// VG growth and shrink.
	g.cleanupDisks("gthick", disk)
	g.must(g.lvm.ExtendVG(ctx, vg, disk))
	if got := g.vg("gthick").PVCount; got != 3 {
		t.Errorf("PVs after vgextend = %d", got)
	}
	g.must(g.lvm.ReduceVG(ctx, vg, disk))
	s := g.state()
	if pv, _ := s.PV(disk); !pv.Orphan() {
		t.Errorf("%s after vgreduce = %+v", disk, pv)
	}
	pv, _ := s.PV(disk)
	g.must(g.lvm.RemovePV(ctx, pv))
	if _, ok := g.state().PV(disk); ok {
		t.Errorf("%s still a PV after pvremove", disk)
	}
}

func TestGuestRAID(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	disks := guestDisks(t, 5)
	vg := g.vgOn("graid", disks...)
	g.sh("modprobe", "-a", "dm-raid", "raid1", "raid10", "raid456")
	t.Logf("kernel modules: %s", g.sh("sh", "-c", "cut -d' ' -f1 /proc/modules | sort | tr '\\n' ' '"))
	tests := []struct {
		o        lvm.LVOptions
		segtype  string
		minDisks int
	}{
		{lvm.LVOptions{Name: "r1", RAID: lvm.RAID1, Mirrors: 1}, "raid1", 2},
		{lvm.LVOptions{Name: "r1x3", RAID: lvm.RAID1, Mirrors: 2}, "raid1", 3},
		{lvm.LVOptions{Name: "r4", RAID: lvm.RAID4, Stripes: 2, StripeSize: "64k"}, "raid4", 3},
		{lvm.LVOptions{Name: "r5", RAID: lvm.RAID5, Stripes: 2}, "raid5", 3},
		{lvm.LVOptions{Name: "r6", RAID: lvm.RAID6, Stripes: 3}, "raid6", 5},
		{lvm.LVOptions{Name: "r10", RAID: lvm.RAID10, Mirrors: 1, Stripes: 2}, "raid10", 4},
	}
	for _, tt := range tests {
		t.Run(string(tt.o.RAID)+"-"+tt.o.Name, func(t *testing.T) {
			tt.o.Size = 32 * mib
			start := time.Now()
			if err := g.lvm.CreateLV(ctx, vg, tt.o); err != nil {
				t.Fatalf("RAID %s: %v", tt.o.RAID, err)
			}
			lv := g.lv("graid", tt.o.Name)
			t.Logf(
				"RAID %s (%s) created in %v: attr %s, %d PVs",
				tt.o.RAID,
				lv.SegType(),
				time.Since(start).Round(time.Millisecond),
				lv.Attr,
				len(lv.PVNames()),
			)
			if !lv.Attr.IsRAID() || lv.SegType() != tt.segtype || !lv.Attr.Active() || lv.Size < tt.o.Size {
				t.Errorf("lv = %+v", lv)
			}
			// The report's RAID health columns: in sync within seconds (32 MiB), healthy, no PV missing.
			lv = g.inSync("graid", tt.o.Name)
			if lv.SyncPercent != 100 || lv.HealthStatus != "" {
				t.Errorf("RAID %s: sync %v%%, health %q", tt.o.RAID, lv.SyncPercent, lv.HealthStatus)
			}
			if st, err := g.lvm.State(ctx, "graid"); err != nil || len(st.VGs) != 1 || st.VGs[0].MissingPVs != 0 {
				t.Errorf("VG graid: %+v, %v", st, err)
			}
			g.sh("dd", "if=/dev/zero", "of="+lv.Path, "bs=1M", "count=4", "oflag=direct")
			g.must(g.lvm.RemoveLV(ctx, vg, tt.o.Name))
		})
	}
	// Too few PVs for the stripes asked is "insufficient space".
	err := g.lvm.CreateLV(ctx, vg, lvm.LVOptions{Name: "r6wide", Size: 32 * mib, RAID: lvm.RAID6, Stripes: 6})
	if !lvm.IsInsufficientSpace(err) {
		t.Errorf("raid6 over 8 PVs on 5: %v", err)
	}
	t.Logf("raid6 with too many stripes: %v", err)
}

func TestGuestThickSnapshot(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	disks := guestDisks(t, 1)
	vg := g.vgOn("gsnap", disks[0])
	g.must(g.lvm.CreateLV(ctx, vg, lvm.LVOptions{Name: "origin", Size: 64 * mib}))
	g.sh("dd", "if=/dev/urandom", "of=/dev/gsnap/origin", "bs=1M", "count=8", "oflag=direct")
	sum := g.sh("sh", "-c", "head -c 8388608 /dev/gsnap/origin | md5sum")
	g.must(
		g.lvm.CreateSnapshot(
			ctx,
			vg,
			lvm.SnapshotOptions{Name: "snap", Origin: "origin", Size: 16 * mib, ReadOnly: true},
		),
	)
	// Changing the origin must not change the snapshot.
	g.sh("dd", "if=/dev/zero", "of=/dev/gsnap/origin", "bs=1M", "count=8", "oflag=direct")
	snap := g.lv("gsnap", "snap")
	if !snap.Attr.IsSnapshot() || snap.Origin != "origin" || snap.Attr.Writable() || !snap.Attr.Active() ||
		snap.Size < 16*mib {
		t.Errorf("snap = %+v", snap)
	}
	if snap.DataPercent <= 0 {
		t.Errorf("COW usage %.2f%% after overwriting the origin", snap.DataPercent)
	}
	if got := g.sh("sh", "-c", "head -c 8388608 /dev/gsnap/snap | md5sum"); got != sum {
		t.Errorf("snapshot content changed: %s != %s", got, sum)
	}
	if o := g.lv("gsnap", "origin"); o.Attr.VolumeType != lvm.VolumeTypeOrigin {
		t.Errorf("origin attr = %s", o.Attr)
	}
	g.must(g.lvm.RemoveLV(ctx, vg, "snap"))
	g.must(g.lvm.RemoveLV(ctx, vg, "origin"))
}

func TestGuestRefusesUntaggedVG(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	disks := guestDisks(t, 2)
	g.cleanupDisks("gforeign", disks[0])
	g.sh("lvm", "vgcreate", "gforeign", disks[0]) // not through our API: no tag
	g.sh("lvm", "lvcreate", "-y", "-n", "data", "-L", "8m", "gforeign")
	foreign := g.vg("gforeign")
	if foreign.Owned() {
		t.Fatalf("untagged VG reported as owned: %+v", foreign)
	}
	if _, err := g.lvm.OwnedVG(ctx, "gforeign"); !lvm.IsNotOurs(err) {
		t.Errorf("OwnedVG: %v", err)
	}
	ops := map[string]func() error{
		"lvcreate":  func() error { return g.lvm.CreateLV(ctx, foreign, lvm.LVOptions{Name: "x", Size: 8 * mib}) },
		"thin pool": func() error { return g.lvm.CreateThinPool(ctx, foreign, lvm.ThinPoolOptions{Name: "p", Size: 8 * mib}) },
		"lvremove":  func() error { return g.lvm.RemoveLV(ctx, foreign, "data") },
		"lvextend":  func() error { return g.lvm.ExtendLV(ctx, foreign, "data", lvm.ExtendOptions{Size: 16 * mib}) },
		"lvchange":  func() error { return g.lvm.ActivateLV(ctx, foreign, "data", lvm.ActivateOptions{}) },
		"vgchange":  func() error { return g.lvm.ActivateVG(ctx, foreign, false) },
		"vgextend":  func() error { return g.lvm.ExtendVG(ctx, foreign, disks[1]) },
		"vgremove":  func() error { return g.lvm.RemoveVG(ctx, foreign) },
		"pvremove": func() error {
			pv, _ := g.state().PV(disks[0])
			return g.lvm.RemovePV(ctx, pv)
		},
	}
	before := g.host.Counter().Count(lvm.Command)
	for name, op := range ops {
		if err := op(); !lvm.IsNotOurs(err) {
			t.Errorf("%s on untagged VG: %v", name, err)
		}
	}
	// Only the state reads inside "pvremove" ran lvm.
	if n := g.host.Counter().Count(lvm.Command) - before; n != 1 {
		t.Errorf("%d lvm executions while refusing, want 1 (a state read)", n)
	}
	lv := g.lv("gforeign", "data")
	if lv.Size != 8*mib || !lv.Attr.Active() || len(g.state().PVsOf("gforeign")) != 1 {
		t.Errorf("foreign VG changed: %+v", lv)
	}
}

func TestGuestExecCounts(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	disks := guestDisks(t, 1)
	vg := g.vgOn("gcount", disks[0])
	c := g.host.Counter()
	c.Reset()
	g.must(g.lvm.CreateLV(ctx, vg, lvm.LVOptions{Name: "one", Size: 8 * mib}))
	_ = g.state()
	if got := c.Snapshot(); got[lvm.Command] != 2 || len(got) != 1 {
		t.Errorf("lvcreate + state read executed %v, want exactly 2 lvm", got)
	}
	if _, err := exec.Run(ctx, g.host, "lvm", "lvs", "gcount/nope"); !lvm.IsNotFound(err) {
		t.Errorf("IsNotFound on a raw exec error: %v", err)
	}
}

// TestGuestReportCapture builds a VG with every LV kind, checks that the raw
// report parses like State, and writes it to $LVMS_CAPTURE_DIR when set (how
// testdata/fullreport-guest-all-kinds.json was captured).
func TestGuestReportCapture(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	disks := guestDisks(t, 2)
	vg := g.vgOn("gcap", disks...)
	g.must(g.lvm.CreateThinPool(ctx, vg, lvm.ThinPoolOptions{Name: "pool", Size: 256 * mib, ChunkSize: 64 << 10}))
	g.must(
		g.lvm.CreateThinLV(
			ctx,
			vg,
			lvm.ThinLVOptions{Name: "thin", Pool: "pool", VirtualSize: gib, Tags: []string{"pvc-x"}},
		),
	)
	g.sh("dd", "if=/dev/urandom", "of=/dev/gcap/thin", "bs=1M", "count=8", "oflag=direct")
	g.must(g.lvm.CreateSnapshot(ctx, vg, lvm.SnapshotOptions{Name: "tsnap", Origin: "thin", ReadOnly: true}))
	g.must(g.lvm.CreateSnapshot(ctx, vg, lvm.SnapshotOptions{Name: "tclone", Origin: "thin", Activate: true}))
	g.must(g.lvm.CreateLV(ctx, vg, lvm.LVOptions{Name: "mirror", Size: 16 * mib, RAID: lvm.RAID1, Mirrors: 1}))
	g.must(g.lvm.CreateLV(ctx, vg, lvm.LVOptions{Name: "thick", Size: 32 * mib}))
	g.must(g.lvm.CreateSnapshot(ctx, vg, lvm.SnapshotOptions{Name: "cow", Origin: "thick", Size: 8 * mib}))
	raw, err := execRun(g, lvm.Command, lvm.ReportArgs("gcap")...)
	g.must(err)
	parsed, err := lvm.ParseReport(raw)
	g.must(err)
	s, err := g.lvm.State(ctx, "gcap")
	g.must(err)
	if len(parsed.LVs) != len(s.LVs) || len(s.LVsOf("gcap")) != 7 {
		t.Errorf("raw report has %d LVs, State %d (%d visible)", len(parsed.LVs), len(s.LVs), len(s.LVsOf("gcap")))
	}
	for _, lv := range s.LVs {
		t.Logf(
			"%-22s attr=%s hidden=%-5t seg=%-9s size=%d data=%.2f meta=%.2f pool=%s origin=%s",
			lv.Name,
			lv.Attr,
			lv.Hidden,
			lv.SegType(),
			lv.Size,
			lv.DataPercent,
			lv.MetadataPercent,
			lv.PoolLV,
			lv.Origin,
		)
	}
	if dir := os.Getenv("LVMS_CAPTURE_DIR"); dir != "" {
		g.must(os.WriteFile(filepath.Join(dir, "fullreport-guest-all-kinds.json"), raw, 0o644))
	}
	for _, n := range []string{"cow", "thick", "mirror", "tclone", "tsnap", "thin", "pool"} {
		g.must(g.lvm.RemoveLV(ctx, vg, n))
	}
}
