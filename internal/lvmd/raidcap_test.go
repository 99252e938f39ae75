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

// TestRAIDCapacityFollowsCreates checks that the cache takes a create's extents from
// the PVs as lvm2 does, so the capacity after it is what lvm2 can still allocate.
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
			l := layoutOf(tt.dc, false)
			size := tt.create * testExtent
			c := &change{vg: "vg", physical: l.physical(size, testExtent), logical: size, layout: l}
			updateVG(st, "vg", func(vg *lvm.VG) { takeBytes(vg, c.physical) })
			takeChangePVs(st, c)
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

func TestPerImageExtents(t *testing.T) {
	tests := []struct {
		free []uint64
		k    int
		want uint64
	}{
		{nil, 2, 0},
		{[]uint64{10}, 1, 10},
		{[]uint64{10, 5}, 1, 15},
		{[]uint64{10, 5}, 2, 5},
		{[]uint64{10, 5}, 3, 0},
		{[]uint64{0, 5, 5}, 2, 5},
		{[]uint64{7, 7, 7}, 2, 7}, // lvm2: raid1 on three equal PVs leaves the third unused
	}
	for _, tt := range tests {
		if got := perImageExtents(tt.free, tt.k); got != tt.want {
			t.Errorf("perImageExtents(%v, %d) = %d, want %d", tt.free, tt.k, got, tt.want)
		}
	}
}

// TestTakePVExtents: the cache takes a new LV's extents from the PVs in the rounds perImageExtents
// counts, stopping at what the LV needs, and leaves PVs of other VGs and unallocatable PVs alone.
func TestTakePVExtents(t *testing.T) {
	raid1 := layout{raid: lvm.RAID1, mirrors: 1}
	tests := []struct {
		name     string
		free     []uint64
		notAlloc []int
		l        layout
		extents  uint64
		withMeta bool
		want     []uint64
	}{
		{name: "two rounds, the second partial", free: []uint64{30, 20, 20}, l: raid1, extents: 24, withMeta: true,
			want: []uint64{5, 0, 15}},
		{name: "grow: no rmeta", free: []uint64{30, 20, 20}, l: raid1, extents: 25, want: []uint64{5, 0, 15}},
		{name: "not allocatable", free: []uint64{30, 20, 20}, notAlloc: []int{0}, l: raid1, extents: 10,
			want: []uint64{30, 10, 10}},
		{name: "linear", free: []uint64{3, 8}, l: layout{}, extents: 5, want: []uint64{3, 3}},
		{name: "more than there is", free: []uint64{4, 4}, l: raid1, extents: 9, withMeta: true, want: []uint64{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := raidState(tt.free, tt.notAlloc...)
			takePVExtents(s, s.VGs[0], tt.l, tt.extents, tt.withMeta)
			for i, pv := range s.PVs {
				if got := pv.Free / testExtent; got != tt.want[i] {
					t.Errorf("PV %s: %d free extents, want %d (all %v)", pv.Name, got, tt.want[i], tt.want)
				}
			}
		})
	}
}
