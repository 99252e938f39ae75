package lvmd

import (
	"math"
	"slices"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// Capacity is the capacity of one device class.
type Capacity struct {
	DeviceClass string
	VolumeGroup string
	Default     bool
	// Ready is false when the VG (or the thin pool) does not exist or the
	// VG is not tagged as ours.
	Ready bool
	// FreeBytes is the size of the largest new LV: VG free minus spare (thick), for RAID
	// classes the largest RAID LV lvcreate can allocate in that (raidcap.go), or for thin
	// classes the stricter of two bounds (thinFreeBytes): overprovision ratio × pool size minus
	// the virtual sizes of the pool's thin LVs, and overprovision ratio × the pool's data space
	// not yet written; never negative.
	FreeBytes uint64
	// SizeBytes is the VG size (thick) or the thin pool size (thin).
	SizeBytes uint64
	// ThinPool is set for thin classes whose pool exists.
	ThinPool *ThinPoolCapacity
	// VGSizeBytes and VGFreeBytes are the volume group's size and free bytes as lvm2 reports them
	// (no spare or reservation taken off), thin classes included; set when Ready.
	VGSizeBytes, VGFreeBytes uint64
}

// ThinPoolCapacity describes the thin pool of a thin class.
type ThinPoolCapacity struct {
	Name            string
	SizeBytes       uint64
	DataPercent     float64
	MetadataPercent float64
	// VirtualBytes is the sum of the virtual sizes of the pool's thin LVs.
	VirtualBytes       uint64
	OverprovisionRatio float64
}

// capacitiesEqual compares two capacity lists (for coalescing Watch).
func capacitiesEqual(a, b []Capacity) bool {
	return slices.EqualFunc(a, b, func(x, y Capacity) bool {
		if x.ThinPool == nil || y.ThinPool == nil {
			return x == y
		}
		xs, ys := x, y
		xs.ThinPool, ys.ThinPool = nil, nil
		return xs == ys && *x.ThinPool == *y.ThinPool
	})
}

// pending holds the capacity reserved by creates and resizes that are
// running: physical bytes per VG and virtual bytes per thin pool.
type pending struct {
	vg   map[string]uint64
	pool map[string]uint64 // key vg/pool
}

func newPending() pending {
	return pending{vg: map[string]uint64{}, pool: map[string]uint64{}}
}

// classCapacity computes the capacity of dc from s and the reservations p; a VG that is not ours,
// or is another node's or cluster's (id), is not ready.
func classCapacity(dc *DeviceClass, s *lvm.State, p pending, id lvm.Identity) Capacity {
	c := Capacity{DeviceClass: dc.Name, VolumeGroup: dc.VolumeGroup, Default: dc.Default}
	if s == nil {
		return c
	}
	vg, ok := s.VG(dc.VolumeGroup)
	if !ok || !vg.Owned() || id.Foreign(vg.Tags) != "" {
		return c
	}
	if !dc.IsThin() {
		c.Ready = true
		c.VGSizeBytes, c.VGFreeBytes = vg.Size, vg.Free
		c.SizeBytes = vg.Size
		c.FreeBytes = sub(sub(vg.Free, p.vg[vg.Name]), dc.SpareBytes())
		if dc.RAID != nil {
			c.FreeBytes = raidFreeBytes(layoutOf(dc, false), s, vg, c.FreeBytes)
		}
		c.FreeBytes = incomplete(vg, c.FreeBytes)
		return c
	}
	pool, ok := s.LV(vg.Name, dc.ThinPool.Name)
	if !ok || !pool.Attr.IsThinPool() {
		return c
	}
	virtual := thinVirtualBytes(s, vg.Name, pool.Name) + p.pool[vg.Name+"/"+pool.Name]
	c.Ready = true
	c.VGSizeBytes, c.VGFreeBytes = vg.Size, vg.Free
	c.SizeBytes = pool.Size
	c.FreeBytes = incomplete(vg, thinFreeBytes(pool, virtual, dc.ThinPool.OverprovisionRatio))
	c.ThinPool = &ThinPoolCapacity{
		Name: pool.Name, SizeBytes: pool.Size, DataPercent: pool.DataPercent,
		MetadataPercent: pool.MetadataPercent, VirtualBytes: virtual,
		OverprovisionRatio: dc.ThinPool.OverprovisionRatio,
	}
	return c
}

// incomplete is free, or 0 while a PV of vg is missing: lvm2 then refuses every lvcreate and
// lvextend in the VG ("Cannot change VG while PVs are missing") until the PV comes back or leaves the
// VG (the agent's RAID repair, docs/vgmanager.md), so no claim is sent to this node meanwhile.
func incomplete(vg lvm.VG, free uint64) uint64 {
	if vg.MissingPVs > 0 {
		return 0
	}
	return free
}

// thinFreeBytes is the virtual size a new thin LV of pool may have. The overprovision ratio bounds
// the sum of the virtual sizes (ratio × pool size, minus those of the pool's thin LVs: TopoLVM's
// and LVMS's rule). That alone says a pool whose data space is nearly written still has room
// whenever its LVs' virtual sizes are small against the ratio (topolvm#1101), and a volume placed
// there fails its writes once the pool fills. So the pool's unwritten data space, times the same
// ratio, bounds it as well, and the stricter bound wins: a pool 95 % written offers at most
// ratio × 5 % of its size, a full one nothing. The data percentage is lvm2's from the last read
// of the state (after every change of ours, and periodically).
func thinFreeBytes(pool lvm.LV, virtual uint64, ratio float64) uint64 {
	byRatio := sub(overprovisioned(pool.Size, ratio), virtual)
	written := uint64(math.Ceil(float64(pool.Size) * min(max(pool.DataPercent, 0), 100) / 100))
	return min(byRatio, overprovisioned(sub(pool.Size, written), ratio))
}

// thinVirtualBytes sums the virtual sizes of the thin LVs (including thin
// snapshots) in pool.
func thinVirtualBytes(s *lvm.State, vg, pool string) uint64 {
	var sum uint64
	for _, lv := range s.LVs {
		if lv.VGName == vg && lv.PoolLV == pool && lv.Attr.IsThin() {
			sum += lv.Size
		}
	}
	return sum
}

func overprovisioned(size uint64, ratio float64) uint64 {
	f := math.Floor(float64(size) * ratio)
	if f >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(f)
}

// sub returns a-b, or 0 when b > a.
func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// layoutOf returns the layout the class gives its thick LVs. Options of an lvcreate option class
// are opaque, so an option class is treated as linear; the periodic refresh corrects the estimate.
func layoutOf(dc *DeviceClass, optionClass bool) lvm.Layout {
	switch {
	case optionClass:
		return lvm.Layout{}
	case dc.RAID != nil:
		return lvm.Layout{RAID: dc.RAID.Type, Mirrors: dc.RAID.Mirrors, Stripes: dc.RAID.Stripes}
	case dc.Stripe != nil:
		return lvm.Layout{Stripes: int(*dc.Stripe)}
	}
	return lvm.Layout{}
}
