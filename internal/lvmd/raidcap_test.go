package lvmd

import (
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

const testExtent = 4 << 20

// raidState returns a state with VG vg of PVs with the given free extents (size = free),
// all allocatable unless listed in notAlloc.
func raidState(free []uint64, notAlloc ...int) *lvm.State {
	s := &lvm.State{}
	var total uint64
	for i, f := range free {
		attr := "a--"
		for _, j := range notAlloc {
			if j == i {
				attr = "---"
			}
		}
		s.PVs = append(s.PVs, lvm.PV{
			Name: "/dev/ubd" + string(rune('a'+i)), VGName: "vg", Attr: attr,
			Size: f * testExtent, Free: f * testExtent,
		})
		total += f
	}
	s.VGs = []lvm.VG{{
		Name: "vg", Tags: []string{lvm.Tag}, ExtentSize: testExtent,
		Size: total * testExtent, Free: total * testExtent, ExtentCount: total, FreeCount: total,
	}}
	return s
}

func raidClass(t lvm.RAIDType, mirrors, stripes int, spareGB uint64) *DeviceClass {
	return &DeviceClass{
		Name: "r", VolumeGroup: "vg", SpareGB: &spareGB,
		RAID: &RAIDConfig{Type: t, Mirrors: mirrors, Stripes: stripes},
	}
}

// TestRAIDCapacity checks the capacity of RAID classes against the largest LVs lvm2
// 2.03.16 created in a UML guest on the same PVs (found by bisecting lvcreate -l; the
// "lvm2" comments give the largest -l that succeeded).
func TestRAIDCapacity(t *testing.T) {
	tests := []struct {
		name     string
		dc       *DeviceClass
		free     []uint64
		notAlloc []int
		pending  uint64 // bytes reserved in the VG
		want     uint64 // extents
	}{
		{"raid1 -m1, two equal PVs: one rmeta extent per image", raidClass(lvm.RAID1, 1, 0, 0),
			[]uint64{74, 74}, nil, 0, 73}, // lvm2: 73
		{"raid1 mirrors 0 means one mirror", raidClass(lvm.RAID1, 0, 0, 0), []uint64{74, 74}, nil, 0, 73},
		{"raid1 -m1, one PV", raidClass(lvm.RAID1, 1, 0, 0), []uint64{500}, nil, 0, 0},
		{"raid1 -m1, unequal PVs: the big PV alone limits", raidClass(lvm.RAID1, 1, 0, 0),
			[]uint64{255, 149, 149}, nil, 0, 254}, // lvm2: 254, not (553/2)-1
		{"raid1 -m1, four unequal PVs", raidClass(lvm.RAID1, 1, 0, 0),
			[]uint64{255, 149, 149, 99}, nil, 0, 297}, // lvm2: 297
		{"raid1 -m1, rounds leave a PV unused", raidClass(lvm.RAID1, 1, 0, 0),
			[]uint64{30, 30, 20, 20, 20}, nil, 0, 49}, // lvm2: 49, not the partition {30,30},{20,20,20}
		{"raid1 -m2, three copies", raidClass(lvm.RAID1, 2, 0, 0), []uint64{255, 149, 149}, nil, 0, 148}, // lvm2: 148
		{"raid5 -i2: extents rounded down to whole stripes", raidClass(lvm.RAID5, 0, 2, 0),
			[]uint64{255, 149, 149}, nil, 0, 296}, // lvm2: 296; 297 rounds up to 298 and fails
		{"raid4 -i2", raidClass(lvm.RAID4, 0, 2, 0), []uint64{255, 149, 149}, nil, 0, 296}, // lvm2: 296
		{"raid5 -i2, four PVs", raidClass(lvm.RAID5, 0, 2, 0), []uint64{255, 149, 149, 99}, nil, 0, 296},
		{"raid5 -i2, images share PVs across rounds", raidClass(lvm.RAID5, 0, 2, 0),
			[]uint64{30, 30, 20, 20, 20}, nil, 0, 78}, // lvm2: 78
		{"raid5 default stripes", raidClass(lvm.RAID5, 0, 0, 0), []uint64{100, 100, 100}, nil, 0, 198},
		{"raid5 -i3", raidClass(lvm.RAID5, 0, 3, 0), []uint64{100, 100, 100, 100}, nil, 0, 297},
		{"raid6 -i3, too few PVs", raidClass(lvm.RAID6, 0, 3, 0), []uint64{255, 149, 149, 99}, nil, 0, 0}, // lvm2: 0
		{"raid6 -i3, five PVs: two parity images", raidClass(lvm.RAID6, 0, 3, 0),
			[]uint64{100, 100, 100, 100, 100}, nil, 0, 297},
		{"raid10 -i2 -m1", raidClass(lvm.RAID10, 1, 2, 0), []uint64{255, 149, 149, 99}, nil, 0, 196}, // lvm2: 196
		{"non-allocatable PV is skipped", raidClass(lvm.RAID1, 1, 0, 0), []uint64{100, 100, 100}, []int{1}, 0, 99},
		{"spare comes off the VG budget", raidClass(lvm.RAID1, 1, 0, 1), []uint64{1000, 1000}, nil, 0, 871},
		{"reservations come off the VG budget", raidClass(lvm.RAID1, 1, 0, 0),
			[]uint64{100, 100}, nil, 50 * testExtent, 74},
		{"budget below one rmeta extent per image", raidClass(lvm.RAID5, 0, 2, 0),
			[]uint64{100, 100, 100}, nil, 298 * testExtent, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPending()
			p.vg["vg"] = tt.pending
			c := classCapacity(tt.dc, raidState(tt.free, tt.notAlloc...), p, lvm.Identity{})
			if !c.Ready {
				t.Fatal("class not ready")
			}
			if got := c.FreeBytes / testExtent; got != tt.want || c.FreeBytes%testExtent != 0 {
				t.Errorf("capacity = %d bytes (%d extents), want %d extents", c.FreeBytes, got, tt.want)
			}
		})
	}
}

// TestRAIDCapacityFollowsCreates checks that the cache, applying a create with the state model,
// takes its extents from the PVs as lvm2 does, so the capacity after it is what lvm2 can still
// allocate.
func TestRAIDCapacityFollowsCreates(t *testing.T) {
	tests := []struct {
		name      string
		dc        *DeviceClass
		free      []uint64
		create    uint64 // extents
		wantAfter uint64 // extents
	}{
		// raid1 on [255,149,149]: 100 data + 1 rmeta from PV a and PV b, leaving [154,48,149]:
		// rounds 149 from a and c, then 5 from a and b: 154 per image, 153 extents.
		{"raid1 on unequal PVs", raidClass(lvm.RAID1, 1, 0, 0), []uint64{255, 149, 149}, 100, 153},
		{"raid1 uses all", raidClass(lvm.RAID1, 1, 0, 0), []uint64{74, 74}, 73, 0},
		{"raid5 uses all", raidClass(lvm.RAID5, 0, 2, 0), []uint64{30, 30, 20, 20, 20}, 78, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := raidState(tt.free)
			o := lvm.LVOptions{Name: "lv", Size: tt.create * testExtent}
			setLayout(tt.dc, &o)
			if err := st.Apply(lvm.CreateLVOp{VG: "vg", LVOptions: o}); err != nil {
				t.Fatal(err)
			}
			var pvFree uint64
			for _, pv := range st.PVs {
				pvFree += pv.Free
			}
			if vg, _ := st.VG("vg"); pvFree != vg.Free {
				t.Errorf("PVs free %d bytes, VG free %d", pvFree, vg.Free)
			}
			got := classCapacity(tt.dc, st, newPending(), lvm.Identity{}).FreeBytes / testExtent
			if got != tt.wantAfter {
				t.Errorf("capacity after create = %d extents, want %d", got, tt.wantAfter)
			}
		})
	}
}

// TestCapacityWhileAPVIsMissing: lvm2 refuses every lvcreate in a VG with a missing PV ("Cannot change
// VG while PVs are missing", measured in a guest), so a class offers nothing until the PV is back or
// removed, whatever free space the other PVs have; the class stays ready (its volumes still work).
func TestCapacityWhileAPVIsMissing(t *testing.T) {
	zero := uint64(0)
	for _, dc := range []*DeviceClass{raidClass(lvm.RAID1, 1, 0, 0), {Name: "t", VolumeGroup: "vg", SpareGB: &zero}} {
		st := raidState([]uint64{100, 100, 100})
		if c := classCapacity(dc, st, newPending(), lvm.Identity{}); c.FreeBytes == 0 {
			t.Fatalf("%s: no capacity with every PV present", dc.Name)
		}
		st.VGs[0].MissingPVs = 1
		st.PVs[1].Name, st.PVs[1].Attr = "[unknown]", "a-m"
		c := classCapacity(dc, st, newPending(), lvm.Identity{})
		if !c.Ready || c.FreeBytes != 0 || c.VGFreeBytes == 0 {
			t.Errorf("%s with a missing PV: ready %t, free %d, VG free %d; want ready, 0, the VG's", dc.Name, c.Ready,
				c.FreeBytes, c.VGFreeBytes)
		}
	}
}
