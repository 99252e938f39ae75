package lvmd

import (
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// RAID capacity: the largest LV lvcreate can allocate with a class's RAID options, by lvm2's
// allocation arithmetic (lvm.Layout; docs/lvmd.md, "RAID classes").

// allocatableFree returns the free extents of the VG's allocatable PVs, nil when the
// state lists no PV of the VG.
func allocatableFree(s *lvm.State, vg lvm.VG) []uint64 {
	pvs := s.PVsOf(vg.Name)
	if len(pvs) == 0 {
		return nil
	}
	out := []uint64{}
	for _, pv := range pvs {
		if allocatable(pv) {
			out = append(out, pv.Free/vg.ExtentSize)
		}
	}
	return out
}

// allocatable reports whether lvm2 may allocate on pv (pv_attr "a--"; a state made by hand may
// leave the attributes empty).
func allocatable(pv lvm.PV) bool { return pv.Attr == "" || pv.Attr[0] == 'a' }

// raidFreeBytes returns the capacity of a RAID class: the largest LV lvcreate can
// allocate, given the PVs' free extents and budget bytes of the VG.
func raidFreeBytes(l lvm.Layout, s *lvm.State, vg lvm.VG, budget uint64) uint64 {
	if vg.ExtentSize == 0 {
		return 0
	}
	return l.MaxExtents(allocatableFree(s, vg), budget/vg.ExtentSize) * vg.ExtentSize
}
