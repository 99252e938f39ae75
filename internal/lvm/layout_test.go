package lvm

import (
	"math"
	"reflect"
	"slices"
	"testing"
)

func TestAllocateRounds(t *testing.T) {
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
		if got := AllocateRounds(slices.Clone(tt.free), tt.k, math.MaxUint64); got != tt.want {
			t.Errorf("AllocateRounds(%v, %d) = %d, want %d", tt.free, tt.k, got, tt.want)
		}
	}
}

// TestApplyAllocatesInRounds: a new LV's areas are taken whole from the first PVs in order that
// hold them, else in the rounds AllocateRounds counts, stopping at what the LV needs; unallocatable
// PVs are left alone.
func TestApplyAllocatesInRounds(t *testing.T) {
	raid1 := LVOptions{RAID: RAID1, Mirrors: 1}
	tests := []struct {
		name     string
		free     []uint64 // extents of the PVs
		notAlloc int      // index of a PV that is not allocatable, or -1
		opts     LVOptions
		extents  uint64
		want     []uint64 // extents left free
	}{
		{"two rounds, the second partial", []uint64{30, 20, 20}, -1, raid1, 24, []uint64{5, 0, 15}},
		{"not allocatable", []uint64{30, 20, 20}, 0, raid1, 10, []uint64{30, 9, 9}},
		{"linear: the first PV that holds it whole", []uint64{3, 8}, -1, LVOptions{}, 5, []uint64{3, 3}},
		{"linear: in the PVs' order", []uint64{8, 8}, -1, LVOptions{}, 5, []uint64{3, 8}},
		{"linear: no PV holds it whole, the largest first", []uint64{3, 4}, -1, LVOptions{}, 5, []uint64{2, 0}},
		{"raid1: whole images on the first PVs in order", []uint64{30, 20, 20}, -1, raid1, 10, []uint64{19, 9, 20}},
		{"striped: one area per PV", []uint64{10, 10, 10}, -1, LVOptions{Stripes: 3}, 6, []uint64{8, 8, 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sizes []uint64
			for _, f := range tt.free {
				sizes = append(sizes, f*DefaultExtentSize+peStart)
			}
			s := modelState(t, sizes...)
			if tt.notAlloc >= 0 {
				s.PVs[tt.notAlloc].Attr = "---"
			}
			o := tt.opts
			o.Name, o.Size = "lv", tt.extents*DefaultExtentSize
			mustApply(t, s, CreateLVOp{VG: "vg", LVOptions: o})
			for i, pv := range s.PVs {
				if got := pv.Free / DefaultExtentSize; got != tt.want[i] {
					t.Errorf("PV %s: %d free extents, want %d (all %v)", pv.Name, got, tt.want[i], tt.want)
				}
			}
		})
	}
}

func TestApplyRefusesMoreThanThereIs(t *testing.T) {
	s := modelState(t, 4*DefaultExtentSize+peStart, 4*DefaultExtentSize+peStart)
	before := s.Clone()
	err := s.Apply(CreateLVOp{VG: "vg", LVOptions: LVOptions{Name: "lv", Size: 4 * DefaultExtentSize, RAID: RAID1}})
	if !IsInsufficientSpace(err) {
		t.Errorf("raid1 of 4 extents + rmeta on two 4-extent PVs: %v, want insufficient space", err)
	}
	if !reflect.DeepEqual(before, s) {
		t.Errorf("refused create changed the state: %+v", s)
	}
}
