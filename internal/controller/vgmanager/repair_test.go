package vgmanager

import (
	"slices"
	"strings"
	"testing"
	"time"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

const mib = uint64(1) << 20

// repairState is VG vg1 on PVs /dev/a, /dev/b and /dev/c with the given free MiB, /dev/b missing
// (lvm2 names it [unknown]) when missing is set.
type repairState struct{ s *lvm.State }

func newRepairState(missing bool, freeMiB ...uint64) repairState {
	s := &lvm.State{VGs: []lvm.VG{{Name: "vg1", Tags: []string{lvm.Tag}, PVCount: len(freeMiB)}}}
	for i, f := range freeMiB {
		pv := lvm.PV{Name: "/dev/" + string(rune('a'+i)), VGName: "vg1", Attr: "a--", Size: 1024 * mib, Free: f * mib}
		if missing && i == 1 {
			pv.Name, pv.Attr = "[unknown]", "a-m"
			s.VGs[0].MissingPVs = 1
		}
		s.PVs = append(s.PVs, pv)
	}
	return repairState{s}
}

// raid1 adds a raid1 LV of sizeMiB with one image (and its 4 MiB metadata) on each of pvs, sync% in
// sync; health "partial" when an image is on [unknown].
func (r repairState) raid1(name string, sizeMiB uint64, sync float64, pvs ...string) {
	lv := lvm.LV{Name: name, VGName: "vg1", Size: sizeMiB * mib, SyncPercent: sync,
		Segments: []lvm.Segment{{Type: "raid1"}}}
	if slices.Contains(pvs, "[unknown]") {
		lv.HealthStatus = "partial"
	}
	r.s.LVs = append(r.s.LVs, lv)
	for i, pv := range pvs {
		n := string(rune('0' + i))
		r.s.LVs = append(r.s.LVs,
			lvm.LV{Name: name + "_rimage_" + n, VGName: "vg1", Hidden: true, Size: sizeMiB * mib,
				Segments: []lvm.Segment{{Type: "linear", Devices: []string{pv + "(1)"}}}},
			lvm.LV{Name: name + "_rmeta_" + n, VGName: "vg1", Hidden: true, Size: 4 * mib,
				Segments: []lvm.Segment{{Type: "linear", Devices: []string{pv + "(0)"}}}})
	}
}

func TestPlanRAIDRepair(t *testing.T) {
	raid1 := &lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1}
	tests := []struct {
		name    string
		cfg     *lvmv1alpha1.RAIDConfig
		state   func() repairState
		joining bool
		lvs     []string
		drop    bool
		problem string // a substring of the one problem; "" for none
	}{
		{"every disk present", raid1, func() repairState {
			r := newRepairState(false, 500, 500, 1000)
			r.raid1("r1", 500, 100, "/dev/a", "/dev/b")
			return r
		}, false, nil, false, ""},
		{"not a RAID class", nil, func() repairState {
			r := newRepairState(true, 500, 500, 1000)
			r.raid1("r1", 500, 100, "/dev/a", "[unknown]")
			return r
		}, false, nil, false, ""},
		{"a leg lost, room on the third disk", raid1, func() repairState {
			r := newRepairState(true, 500, 500, 1000)
			r.raid1("r1", 500, 100, "/dev/a", "[unknown]")
			return r
		}, false, []string{"r1"}, false, ""},
		{"only the healthy LV's disks have room", raid1, func() repairState {
			r := newRepairState(true, 900, 500, 100)
			r.raid1("r1", 100, 100, "/dev/a", "[unknown]")
			return r
		}, false, nil, false, "no room to repair RAID LV r1: its lost images need 104Mi on disks that hold " +
			"none of its other images, 100Mi is free there; list a blank disk of at least 104Mi"},
		{"two LVs, room for one", raid1, func() repairState {
			r := newRepairState(true, 100, 500, 300)
			r.raid1("r1", 200, 100, "/dev/a", "[unknown]")
			r.raid1("r2", 200, 100, "/dev/a", "[unknown]")
			return r
		}, false, []string{"r1"}, false, "no room to repair RAID LV r2: its lost images need 204Mi on disks that hold none of its other images, 96Mi is free there"},
		{"disks joining: lvm2 decides", raid1, func() repairState {
			r := newRepairState(true, 0, 0, 0)
			r.raid1("r1", 500, 100, "/dev/a", "[unknown]")
			return r
		}, true, []string{"r1"}, false, ""},
		{"not in sync", raid1, func() repairState {
			r := newRepairState(true, 500, 500, 1000)
			r.raid1("r1", 500, 97.25, "/dev/a", "[unknown]")
			return r
		}, false, nil, false, "RAID LV r1 lost an image on a missing disk and is 97.25% in sync"},
		{"repaired: the missing disk leaves", raid1, func() repairState {
			r := newRepairState(true, 500, 1024, 500)
			r.raid1("r1", 500, 100, "/dev/a", "/dev/c")
			return r
		}, false, nil, true, ""},
		{"a linear LV on the missing disk keeps it", raid1, func() repairState {
			r := newRepairState(true, 500, 1000, 1000)
			r.raid1("r1", 500, 100, "/dev/a", "/dev/c")
			r.s.LVs = append(r.s.LVs, lvm.LV{Name: "lin", VGName: "vg1", Size: 8 * mib,
				Segments: []lvm.Segment{{Type: "linear", Devices: []string{"[unknown](0)"}}}})
			return r
		}, false, nil, false, ""},
		{"more disks missing than raid1 tolerates", raid1, func() repairState {
			r := newRepairState(true, 500, 500, 1000)
			r.s.VGs[0].MissingPVs = 2
			r.raid1("r1", 500, 100, "[unknown]", "[unknown]")
			return r
		}, false, nil, false, "2 disks of volume group vg1 are missing on node n1, more than raid1 tolerates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.state().s
			got := planRAIDRepair(s, s.VGs[0], tt.cfg, "n1", tt.joining)
			if !slices.Equal(got.lvs, tt.lvs) || got.dropMissing != tt.drop {
				t.Errorf("repair %v, drop missing %t; want %v, %t", got.lvs, got.dropMissing, tt.lvs, tt.drop)
			}
			switch {
			case tt.problem == "" && len(got.problems) > 0:
				t.Errorf("problems %q, want none", got.problems)
			case tt.problem != "" && (len(got.problems) != 1 || !strings.Contains(got.problems[0], tt.problem)):
				t.Errorf("problems %q, want one with %q", got.problems, tt.problem)
			}
		})
	}
}

func TestIsImageOf(t *testing.T) {
	for _, tc := range []struct {
		sub, lv string
		want    bool
	}{
		{"r1_rimage_0", "r1", true}, {"r1_rmeta_12", "r1", true}, {"r1_rimage_", "r1", false},
		{"r1_rimage_0_extracted", "r1", false}, {"r10_rimage_0", "r1", false}, {"r1_tdata", "r1", false},
	} {
		if got := isImageOf(tc.sub, tc.lv); got != tc.want {
			t.Errorf("isImageOf(%q, %q) = %t", tc.sub, tc.lv, got)
		}
	}
}

func TestRepairWait(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	in := Input{Name: "vg1", NodeName: "n1"}
	for _, tc := range []struct {
		name  string
		delay time.Duration
		since time.Time
		want  string
	}{
		{"no delay", 0, time.Time{}, ""},
		{"first seen now", 5 * time.Minute, time.Time{}, "a disk of volume group vg1 is missing on node n1 since " +
			"2026-12-01T10:00:00Z: unless it comes back, lvms repairs the RAID volumes from 2026-12-01T10:05:00Z"},
		{"seen a minute ago", 5 * time.Minute, now.Add(-time.Minute), "since 2026-12-01T09:59:00Z: unless it comes " +
			"back, lvms repairs the RAID volumes from 2026-12-01T10:04:00Z"},
		{"due", 5 * time.Minute, now.Add(-5 * time.Minute), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in.RepairDelay, in.MissingSince = tc.delay, tc.since
			got := repairWait(in, now)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}

// TestRecordMissing: the delay starts on the first pass that sees a disk missing, holds across
// passes that could not tell, and ends when none is missing.
func TestRecordMissing(t *testing.T) {
	r := &Reconciler{missingSince: map[string]time.Time{}}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	missing := lvmv1alpha1.VGStatus{RAIDStatus: &lvmv1alpha1.RAIDStatus{DegradedMemberCount: 1}}
	steps := []struct {
		st   lvmv1alpha1.VGStatus
		want time.Time
	}{
		{lvmv1alpha1.VGStatus{RAIDStatus: &lvmv1alpha1.RAIDStatus{}}, time.Time{}},
		{missing, t0.Add(1 * time.Minute)},
		{missing, t0.Add(1 * time.Minute)},
		{lvmv1alpha1.VGStatus{Status: lvmv1alpha1.VGStatusFailed}, t0.Add(1 * time.Minute)},
		{lvmv1alpha1.VGStatus{RAIDStatus: &lvmv1alpha1.RAIDStatus{}}, time.Time{}},
	}
	for i, s := range steps {
		r.recordMissing("vg1", s.st, t0.Add(time.Duration(i)*time.Minute))
		if got := r.missingFrom("vg1"); !got.Equal(s.want) {
			t.Errorf("pass %d: missing since %v, want %v", i, got, s.want)
		}
	}
	if repairDelay(0) != DefaultRAIDRepairDelay || repairDelay(-1) != 0 || repairDelay(time.Second) != time.Second {
		t.Error("repairDelay")
	}
}
