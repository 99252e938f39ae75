package lvmd

import (
	"cmp"
	"math"
	"slices"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// RAID capacity: the largest LV lvcreate can allocate with a class's RAID options
// (docs/lvmd.md, "RAID classes").
//
// A RAID LV of E extents with S data stripes has K images (raid1: mirrors+1; raid10:
// S×(mirrors+1); raid4/5: S+1; raid6: S+2). lvm2 allocates every image as one area of
// E/S data extents plus its rmeta sub-LV (one extent) and fills the K areas in rounds:
// each round takes the K PVs with the most free extents (K distinct PVs) and the same
// number of extents, the smallest free count among them, from each. Allocation fails
// when fewer than K PVs have free extents left. So the per-image limit is the sum of
// the rounds of that process (perImageExtents), and the largest LV is
// (limit − 1) × S extents.

// images is the number of parallel areas an LV of the layout is allocated in: the RAID
// images, the stripes of a striped LV, or 1.
func (l layout) images() int {
	stripes := l.dataStripes()
	switch l.raid {
	case lvm.RAID1:
		return max(l.mirrors, 1) + 1
	case lvm.RAID10:
		return stripes * (max(l.mirrors, 1) + 1)
	case lvm.RAID4, lvm.RAID5:
		return stripes + 1
	case lvm.RAID6:
		return stripes + 2
	}
	return stripes
}

// metaExtents is the number of metadata extents (rmeta) allocated with each image.
func (l layout) metaExtents() uint64 {
	if l.raid == "" {
		return 0
	}
	return 1
}

// perImageExtents returns how many extents lvm2 can give each of k parallel areas
// from PVs with the free extent counts free: the rounds of the allocation described
// above, each taking the smallest of the k largest counts from each of the k PVs.
func perImageExtents(free []uint64, k int) uint64 {
	return allocateRounds(slices.Clone(free), k, math.MaxUint64)
}

// allocateRounds runs lvm2's allocation rounds over the free extent counts free, which it
// changes in place: each round takes from each of the k largest counts the smallest of them
// (at most what is still needed), until need extents per area are taken or fewer than k
// counts are left non-zero. It returns the extents taken per area.
func allocateRounds(free []uint64, k int, need uint64) uint64 {
	if k <= 0 || len(free) < k {
		return 0
	}
	idx := make([]int, len(free))
	for i := range idx {
		idx[i] = i
	}
	var total uint64
	for total < need {
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(free[b], free[a]) })
		take := min(free[idx[k-1]], need-total)
		if take == 0 {
			break
		}
		for _, i := range idx[:k] {
			free[i] -= take
		}
		total += take
	}
	return total
}

// maxRAIDExtents returns the largest LV (in extents) of layout l on PVs with the free
// extent counts pvFree when at most budget extents of the VG may be used in all (VG
// free minus spare and reservations). A nil pvFree (the state lists no PV of the VG,
// as in fakes) leaves only the budget.
func (l layout) maxRAIDExtents(pvFree []uint64, budget uint64) uint64 {
	k := uint64(l.images())
	perImage := budget / k
	if pvFree != nil {
		perImage = min(perImage, perImageExtents(pvFree, int(k)))
	}
	if perImage <= l.metaExtents() {
		return 0
	}
	return (perImage - l.metaExtents()) * uint64(l.dataStripes())
}

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

// allocatable reports whether lvm2 may allocate on pv (pv_attr "a--"; fakes leave the
// attributes empty).
func allocatable(pv lvm.PV) bool { return pv.Attr == "" || pv.Attr[0] == 'a' }

// raidFreeBytes returns the capacity of a RAID class: the largest LV lvcreate can
// allocate, given the PVs' free extents and budget bytes of the VG.
func raidFreeBytes(l layout, s *lvm.State, vg lvm.VG, budget uint64) uint64 {
	if vg.ExtentSize == 0 {
		return 0
	}
	return l.maxRAIDExtents(allocatableFree(s, vg), budget/vg.ExtentSize) * vg.ExtentSize
}

// takePVExtents updates the cached PV free counts of VG vg for a new LV (or a grow) of
// lvExtents extents with layout l, allocated as perImageExtents models it: rounds
// over the k PVs with the most free extents. The periodic refresh corrects the
// estimate with what lvm2 really chose.
func takePVExtents(st *lvm.State, vg lvm.VG, l layout, lvExtents uint64, withMeta bool) {
	k := l.images()
	need := lvExtents / uint64(l.dataStripes())
	if withMeta {
		need += l.metaExtents()
	}
	var idx []int
	var free []uint64
	for i, pv := range st.PVs {
		if pv.VGName == vg.Name && allocatable(pv) && vg.ExtentSize > 0 {
			idx = append(idx, i)
			free = append(free, pv.Free/vg.ExtentSize)
		}
	}
	left := slices.Clone(free)
	allocateRounds(left, k, need)
	for j, i := range idx {
		st.PVs[i].Free -= (free[j] - left[j]) * vg.ExtentSize
	}
}
