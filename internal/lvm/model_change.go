package lvm

import (
	"slices"
	"strings"
)

// RemoveLVOp is `lvremove` of one LV (Client.RemoveLV, RemoveThinPool): a copy-on-write origin
// takes its snapshots with it, a thin pool its thin LVs, and the last thin pool of a VG the pool
// metadata spare. An open LV is refused.
type RemoveLVOp struct {
	VG, Name string
}

func (op RemoveLVOp) apply(s *State) error {
	i, err := s.lvIndex(op.VG, op.Name)
	if err != nil {
		return err
	}
	lv := s.LVs[i]
	var with []string
	for _, o := range s.LVs {
		cow := o.Origin == lv.Name && o.Attr.IsSnapshot()
		if o.VGName == op.VG && (cow || lv.Attr.IsThinPool() && o.PoolLV == lv.Name && o.Attr.IsThin()) {
			with = append(with, o.Name)
		}
	}
	// A pool is open while its thin LVs are active; only an LV that is open itself is in use.
	for _, name := range append(with, lv.Name) {
		if o, _ := s.LV(op.VG, name); o.Attr.IsOpen() && !o.Attr.IsThinPool() {
			return refuse(ErrInUse, "Logical volume %s contains a filesystem in use.", o.FullName())
		}
	}
	s.unmapThin(op.VG, lv)
	for _, name := range append(with, lv.Name) {
		if j, err := s.lvIndex(op.VG, name); err == nil {
			s.release(j)
		}
	}
	for j := range s.LVs {
		if o := &s.LVs[j]; o.VGName == op.VG && o.Origin == lv.Name {
			o.Origin = "" // a thin snapshot outlives its origin
		}
		if o := &s.LVs[j]; o.VGName == op.VG && o.Name == lv.Origin && o.Attr.VolumeType == VolumeTypeOrigin &&
			!s.hasSnapshot(op.VG, o.Name) {
			o.Attr.VolumeType, o.Attr.TargetType = VolumeTypePlain, TargetNone
		}
	}
	if lv.Attr.IsThinPool() && !slices.ContainsFunc(s.LVs, func(o LV) bool {
		return o.VGName == op.VG && o.Attr.IsThinPool()
	}) {
		s.releaseSpare(op.VG, lv.MetadataSize)
	}
	return nil
}

// unmapThin takes what thin LV lv maps (its data percentage of its virtual size) off its pool's data
// percentage when lv shares no chunk with a thin snapshot (it is none and has none): lvremove gives
// those chunks back to the pool. A shared LV's chunks are left to the next state read.
func (s *State) unmapThin(vg string, lv LV) {
	if !lv.Attr.IsThin() || lv.PoolLV == "" || lv.Origin != "" || lv.DataPercent <= 0 {
		return
	}
	if slices.ContainsFunc(s.LVs, func(o LV) bool { return o.VGName == vg && o.Origin == lv.Name }) {
		return
	}
	i, err := s.lvIndex(vg, lv.PoolLV)
	if err != nil || s.LVs[i].Size == 0 {
		return
	}
	p := &s.LVs[i]
	p.DataPercent = max(p.DataPercent-lv.DataPercent*float64(lv.Size)/float64(p.Size), 0)
}

// releaseSpare removes the VG's pool metadata spare with its last pool. A state read does not list
// it: its extents, as large as the pool's metadata, are then returned to the VG only.
func (s *State) releaseSpare(vg string, metadata uint64) {
	if j, err := s.lvIndex(vg, poolMetadataSpare); err == nil {
		s.release(j)
		return
	}
	if i, err := s.vgIndex(vg); err == nil && s.VGs[i].ExtentSize > 0 {
		v := &s.VGs[i]
		v.FreeCount += RoundUp(metadata, v.ExtentSize) / v.ExtentSize
		v.Free = v.FreeCount * v.ExtentSize
	}
}

func (s *State) hasSnapshot(vg, origin string) bool {
	return slices.ContainsFunc(s.LVs, func(o LV) bool {
		return o.VGName == vg && o.Origin == origin && o.Attr.IsSnapshot()
	})
}

// RenameLVOp is `lvrename` (Client.RenameLV); snapshots and sub-LVs follow.
type RenameLVOp struct {
	VG, From, To string
}

func (op RenameLVOp) apply(s *State) error {
	i, err := s.lvIndex(op.VG, op.From)
	if err != nil {
		return refuse(ErrNotFound, "Existing logical volume \"%s\" not found in volume group \"%s\"", op.From, op.VG)
	}
	if err := s.newLVName(op.VG, op.To); err != nil {
		return err
	}
	for j := range s.LVs {
		o := &s.LVs[j]
		if o.VGName != op.VG {
			continue
		}
		if o.Origin == op.From {
			o.Origin = op.To
		}
		if o.PoolLV == op.From {
			o.PoolLV = op.To
		}
		if o.Hidden && IsSubLV(op.From, o.Name) {
			o.Name = op.To + strings.TrimPrefix(o.Name, op.From)
		}
		o.Segments = renameDevices(o.Segments, op.From, op.To)
	}
	s.LVs[i].Name = op.To
	s.LVs[i].Path = "/dev/" + op.VG + "/" + op.To
	s.LVs[i].DMPath = DMPath(op.VG, op.To)
	return nil
}

// renameDevices returns segs with the sub-LVs of LV from among their devices renamed for LV to: a
// copy when any is (a state shares nothing it changes with its readers).
func renameDevices(segs []Segment, from, to string) []Segment {
	var out []Segment
	for k, seg := range segs {
		for d, dev := range seg.Devices {
			rest, ok := strings.CutPrefix(dev, from+"_")
			if !ok {
				continue
			}
			if out == nil {
				out = slices.Clone(segs)
			}
			if &out[k].Devices[0] == &segs[k].Devices[0] {
				out[k].Devices = slices.Clone(seg.Devices)
			}
			out[k].Devices[d] = to + "_" + rest
		}
	}
	if out == nil {
		return segs
	}
	return out
}

// AddLVTagsOp is `lvchange --addtag` (Client.AddLVTags).
type AddLVTagsOp struct {
	VG, Name string
	Tags     []string
}

func (op AddLVTagsOp) apply(s *State) error {
	i, err := s.lvIndex(op.VG, op.Name)
	if err != nil {
		return err
	}
	s.LVs[i].Tags = addTags(s.LVs[i].Tags, op.Tags)
	return nil
}

// addTags returns tags with those of add it lacks appended (a new slice: a state shares nothing it
// changes with its readers).
func addTags(tags, add []string) []string {
	out := slices.Clone(tags)
	for _, t := range add {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// ActivateLVOp is `lvchange -ay|-an` (Client.ActivateLV); activating clears nothing else.
type ActivateLVOp struct {
	VG, Name string
	Active   bool
}

func (op ActivateLVOp) apply(s *State) error {
	i, err := s.lvIndex(op.VG, op.Name)
	if err != nil {
		return err
	}
	lv := s.LVs[i]
	inUse := lv.Attr.IsOpen() && !lv.Attr.IsThinPool() || lv.Attr.IsThinPool() && slices.ContainsFunc(s.LVs,
		func(o LV) bool { return o.VGName == op.VG && o.PoolLV == lv.Name && o.Attr.Active() })
	if !op.Active && inUse {
		return refuse(ErrInUse, "Logical volume %s in use.", lv.FullName())
	}
	if !op.Active {
		s.LVs[i].Attr.Open = '-'
	}
	s.LVs[i].Attr.State = StateInactive
	if op.Active {
		s.LVs[i].Attr.State = StateActive
	}
	return nil
}
