package lvm

import (
	"slices"
	"strings"
)

// State is one consistent snapshot of the host's LVM objects, read with a
// single `lvm fullreport`.
type State struct {
	VGs []VG
	// PVs holds every PV, including orphans (VGName "").
	PVs []PV
	// LVs holds the LVs lvm2 reports: fullreport lists visible LVs only
	// (no pool data/metadata or RAID images); LV.Hidden marks such internal
	// LVs should a report include them.
	LVs []LV
}

// VG is a volume group. Sizes are bytes.
type VG struct {
	Name        string
	UUID        string
	Attr        string
	Size        uint64
	Free        uint64
	ExtentSize  uint64
	ExtentCount uint64
	FreeCount   uint64
	Tags        []string
	PVCount     int
	LVCount     int
	// MissingPVs is the number of the VG's physical volumes whose device is missing.
	MissingPVs int
}

// Owned reports whether the VG carries the lvms Tag.
func (vg VG) Owned() bool { return slices.Contains(vg.Tags, Tag) }

// PV is a physical volume. Sizes are bytes.
type PV struct {
	Name    string
	UUID    string
	VGName  string // "" for an orphan PV
	Attr    string
	Size    uint64
	Free    uint64
	DevSize uint64
	Tags    []string
}

// Orphan reports whether the PV belongs to no VG.
func (pv PV) Orphan() bool { return pv.VGName == "" }

// Missing reports whether lvm2 cannot find the PV's device (pv_attr "a-m"); lvm2 names such a PV
// "[unknown]", in pvs and in the devices of the LV segments on it.
func (pv PV) Missing() bool { return len(pv.Attr) > 2 && pv.Attr[2] == 'm' }

// LV is a logical volume. Sizes are bytes.
type LV struct {
	Name   string
	VGName string
	UUID   string
	Attr   LVAttr
	Size   uint64
	// Hidden LVs are internal (thin pool data/metadata, RAID images).
	Hidden bool
	// PoolLV is the thin pool of a thin LV.
	PoolLV string
	// Origin is the origin of a snapshot.
	Origin string
	// DataPercent and MetadataPercent are the fill levels of a thin pool
	// (DataPercent also of thin LVs and COW snapshots); 0 when unknown, e.g.
	// when the LV is inactive.
	DataPercent     float64
	MetadataPercent float64
	// MetadataSize is the thin pool's metadata LV size.
	MetadataSize uint64
	Tags         []string
	Path         string // /dev/<vg>/<lv>
	DMPath       string // /dev/mapper/<vg>-<lv>
	// SyncPercent is a RAID (or mirror) LV's resynchronization progress, 0-100; 0 when unknown.
	SyncPercent float64
	// HealthStatus is lvm2's health of the LV, "" when healthy (RAID: "partial", "refresh needed",
	// "mismatches exist"; thin pools: "failed", "out_of_data", "metadata_read_only").
	HealthStatus string
	// ReadAhead is the LV's read-ahead setting (lv_read_ahead): auto, none or sectors; "" unknown.
	ReadAhead ReadAhead
	Segments  []Segment
}

// Segment is one LV segment.
type Segment struct {
	Type       string // linear, striped, raid1, thin-pool, thin, ...
	Stripes    int
	StripeSize uint64
	ChunkSize  uint64
	Size       uint64
	// Devices are the PVs or sub-LVs with their starting extent, e.g.
	// "/dev/sdb(0)" or "pool_tdata(0)".
	Devices []string
}

// SegType returns the type of the LV's first segment ("" when unknown).
func (lv LV) SegType() string {
	if len(lv.Segments) == 0 {
		return ""
	}
	return lv.Segments[0].Type
}

// PVNames returns the PV paths the LV's segments are allocated on directly
// (without the extent suffix); sub-LVs such as pool data are not included.
func (lv LV) PVNames() []string {
	return slices.DeleteFunc(lv.deviceNames(), func(d string) bool { return !strings.HasPrefix(d, "/") })
}

// OnAnyOf reports whether a segment of the LV lies directly on one of the PVs named (a missing PV
// is "[unknown]").
func (lv LV) OnAnyOf(pvs []string) bool {
	return slices.ContainsFunc(lv.deviceNames(), func(d string) bool { return slices.Contains(pvs, d) })
}

// deviceNames lists, once each, the devices of the LV's segments without the extent suffix: PV
// paths, "[unknown]" for a missing PV, or sub-LV names.
func (lv LV) deviceNames() []string {
	var out []string
	for _, s := range lv.Segments {
		for _, d := range s.Devices {
			if i := strings.LastIndexByte(d, '('); i >= 0 {
				d = d[:i]
			}
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// FullName returns "vg/lv".
func (lv LV) FullName() string { return lv.VGName + "/" + lv.Name }

// PVVolumeGroups maps each PV's device path to its VG name ("" for an orphan PV), as the device filter
// (devices.Policy.PVs) wants it.
func (s *State) PVVolumeGroups() map[string]string {
	pvs := make(map[string]string, len(s.PVs))
	for _, pv := range s.PVs {
		pvs[pv.Name] = pv.VGName
	}
	return pvs
}

// VG returns the VG named name.
func (s *State) VG(name string) (VG, bool) {
	i := slices.IndexFunc(s.VGs, func(vg VG) bool { return vg.Name == name })
	if i < 0 {
		return VG{}, false
	}
	return s.VGs[i], true
}

// LV returns the LV name in VG vg.
func (s *State) LV(vg, name string) (LV, bool) {
	i := slices.IndexFunc(s.LVs, func(lv LV) bool { return lv.VGName == vg && lv.Name == name })
	if i < 0 {
		return LV{}, false
	}
	return s.LVs[i], true
}

// PV returns the PV with device path name.
func (s *State) PV(name string) (PV, bool) {
	i := slices.IndexFunc(s.PVs, func(pv PV) bool { return pv.Name == name })
	if i < 0 {
		return PV{}, false
	}
	return s.PVs[i], true
}

// LVsOf returns the visible (non-hidden) LVs of VG vg.
func (s *State) LVsOf(vg string) []LV {
	var out []LV
	for _, lv := range s.LVs {
		if lv.VGName == vg && !lv.Hidden {
			out = append(out, lv)
		}
	}
	return out
}

// PVsOf returns the PVs of VG vg.
func (s *State) PVsOf(vg string) []PV {
	var out []PV
	for _, pv := range s.PVs {
		if pv.VGName == vg {
			out = append(out, pv)
		}
	}
	return out
}
