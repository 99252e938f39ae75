package lvm

import (
	"cmp"
	"math"
	"slices"
)

// Layout is how a thick LV's extents are spread over PVs: linear, striped or RAID. It is lvm2's
// allocation arithmetic, which the state model (State.Apply) and lvmd's capacity both use
// (docs/lvmd.md, "RAID classes").
//
// A RAID LV of E extents with S data stripes has K images (raid1: mirrors+1; raid10:
// S×(mirrors+1); raid4/5: S+1; raid6: S+2). lvm2 allocates every image as one area of
// E/S data extents plus its rmeta sub-LV (one extent) and fills the K areas in rounds:
// each round takes the K PVs with the most free extents (K distinct PVs) and the same
// number of extents, the smallest free count among them, from each. Allocation fails
// when fewer than K PVs have free extents left. A striped LV is the same with K = S and
// no metadata.
type Layout struct {
	RAID    RAIDType
	Mirrors int
	Stripes int
}

// Layout returns the layout of the LV the options describe. Free-form arguments (Extra) are
// opaque to it: an LV made with them is modelled as its typed fields say.
func (o LVOptions) Layout() Layout {
	return Layout{RAID: o.RAID, Mirrors: o.Mirrors, Stripes: o.Stripes}
}

// DataStripes is the number of stripes the LV's data is split over.
func (l Layout) DataStripes() int {
	switch l.RAID {
	case RAID1:
		return 1
	case RAID4, RAID5, RAID10:
		return max(l.Stripes, 2)
	case RAID6:
		return max(l.Stripes, 3)
	}
	return max(l.Stripes, 1)
}

// Images is the number of parallel areas an LV of the layout is allocated in: the RAID
// images, the stripes of a striped LV, or 1.
func (l Layout) Images() int {
	stripes := l.DataStripes()
	switch l.RAID {
	case RAID1:
		return max(l.Mirrors, 1) + 1
	case RAID10:
		return stripes * (max(l.Mirrors, 1) + 1)
	case RAID4, RAID5:
		return stripes + 1
	case RAID6:
		return stripes + 2
	}
	return stripes
}

// MetaExtents is the number of metadata extents (rmeta) allocated with each image.
func (l Layout) MetaExtents() uint64 {
	if l.RAID == "" {
		return 0
	}
	return 1
}

// LVSize returns the size lvm2 gives an LV asked for size bytes: whole extents, and a whole
// number of extents per data stripe.
func (l Layout) LVSize(size, extent uint64) uint64 {
	s := RoundUp(size, extent)
	if n := uint64(l.DataStripes()); n > 1 {
		s = RoundUp(s, n*extent)
	}
	return s
}

// PhysicalExtents is the number of VG extents an LV of lvExtents extents takes: the data plus
// RAID copies or parity and one metadata extent per RAID image.
func (l Layout) PhysicalExtents(lvExtents uint64) uint64 {
	if l.RAID == "" {
		return lvExtents
	}
	return uint64(l.Images()) * (lvExtents/uint64(l.DataStripes()) + l.MetaExtents())
}

// GrowExtents is the number of VG extents growing an LV by lvExtents extents takes (a grow adds
// no RAID metadata).
func (l Layout) GrowExtents(lvExtents uint64) uint64 {
	if l.RAID == "" {
		return lvExtents
	}
	return uint64(l.Images()) * (lvExtents / uint64(l.DataStripes()))
}

// MaxExtents returns the largest LV (in extents) of the layout on PVs with the free extent
// counts pvFree when at most budget extents of the VG may be used in all. A nil pvFree (a
// state that lists no PV of the VG) leaves only the budget.
func (l Layout) MaxExtents(pvFree []uint64, budget uint64) uint64 {
	k := uint64(l.Images())
	perImage := budget / k
	if pvFree != nil {
		perImage = min(perImage, AllocateRounds(slices.Clone(pvFree), int(k), math.MaxUint64))
	}
	if perImage <= l.MetaExtents() {
		return 0
	}
	return (perImage - l.MetaExtents()) * uint64(l.DataStripes())
}

// AllocateRounds runs lvm2's allocation rounds over the free extent counts free, which it
// changes in place: each round takes from each of the k largest counts the smallest of them
// (at most what is still needed), until need extents per area are taken or fewer than k
// counts are left non-zero. It returns the extents taken per area.
func AllocateRounds(free []uint64, k int, need uint64) uint64 {
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

// RoundUp rounds n up to a multiple of unit (unit 0 leaves n unchanged).
func RoundUp(n, unit uint64) uint64 {
	if unit == 0 || n%unit == 0 {
		return n
	}
	return n + unit - n%unit
}
