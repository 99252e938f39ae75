package lvm

import (
	"fmt"
	"slices"
	"strconv"
)

// CreateLVOp is `lvcreate` of a thick LV (Client.CreateLV).
type CreateLVOp struct {
	VG string
	LVOptions
}

func (op CreateLVOp) apply(s *State) error {
	vg, err := s.newLV(op.VG, op.Name)
	if err != nil {
		return err
	}
	l := op.Layout()
	size := l.LVSize(op.Size, vg.ExtentSize)
	lvExt := size / max(vg.ExtentSize, 1)
	k := l.Images()
	rounds, err := s.allocate(vg.Name, k, lvExt/uint64(l.DataStripes())+l.MetaExtents(), placement{})
	if err != nil {
		return err
	}
	lv := LV{
		Name: op.Name,
		Size: size,
		Tags: slices.Clone(op.Tags),
		Attr: attr(VolumeTypePlain, true, TargetNone, false),
	}
	if l.RAID == "" {
		lv.Segments = segments(rounds, vg.ExtentSize)
		s.addLV(vg, lv)
		return nil
	}
	lv.Attr = attr(VolumeTypeRAID, true, TargetRAID, false)
	seg := Segment{Type: string(l.RAID), Stripes: k, Size: size}
	for j := range k {
		seg.Devices = append(seg.Devices, fmt.Sprintf("%s_rimage_%d(0)", op.Name, j))
		s.addRAIDImage(vg, op.Name, j, rounds)
	}
	lv.Segments = []Segment{seg}
	s.addLV(vg, lv)
	return nil
}

// addRAIDImage adds image j of RAID LV name: its rmeta sub-LV takes the first extent of the
// image's areas, its rimage sub-LV the rest.
func (s *State) addRAIDImage(vg VG, name string, j int, rounds []round) {
	suffix := "_" + strconv.Itoa(j)
	if len(rounds) == 0 {
		return
	}
	segs := image(rounds, j, vg.ExtentSize)
	first := rounds[0][j]
	meta := Segment{Type: "linear", Stripes: 1, Size: vg.ExtentSize, Devices: []string{first.device()}}
	segs[0].Size -= vg.ExtentSize
	segs[0].Devices = []string{area{pv: first.pv, start: first.start + 1}.device()}
	var size uint64
	for _, sg := range segs {
		size += sg.Size
	}
	s.addLV(vg, LV{Name: name + "_rmeta" + suffix, Hidden: true, Size: vg.ExtentSize,
		Attr: hiddenAttr(VolumeTypeMetadata, TargetRAID), Segments: []Segment{meta}})
	s.addLV(vg, LV{Name: name + "_rimage" + suffix, Hidden: true, Size: size,
		Attr: hiddenAttr(VolumeTypeImage, TargetRAID), Segments: segs})
}

// CreateThinLVOp is `lvcreate --type thin` (Client.CreateThinLV). lvm2 shows a thin LV's zero flag
// as its pool's.
type CreateThinLVOp struct {
	VG string
	ThinLVOptions
}

func (op CreateThinLVOp) apply(s *State) error {
	vg, pool, err := s.thinPool(op.VG, op.Pool)
	if err != nil {
		return err
	}
	if err := s.newLVName(vg.Name, op.Name); err != nil {
		return err
	}
	s.addLV(vg, LV{Name: op.Name, Size: RoundUp(op.VirtualSize, vg.ExtentSize), PoolLV: pool.Name,
		Tags: slices.Clone(op.Tags), Attr: attr(VolumeTypeThin, true, TargetThin, pool.Attr.Zero),
		Segments: []Segment{{Type: "thin", Size: RoundUp(op.VirtualSize, vg.ExtentSize)}}})
	return nil
}

// thinPool returns VG vg and its thin pool name.
func (s *State) thinPool(vg, name string) (VG, LV, error) {
	v, ok := s.VG(vg)
	if !ok {
		return v, LV{}, refuse(ErrNotFound, "Volume group \"%s\" not found", vg)
	}
	pool, ok := s.LV(vg, name)
	if !ok || !pool.Attr.IsThinPool() {
		return v, pool, refuse(ErrNotFound, "Failed to find logical volume \"%s/%s\"", vg, name)
	}
	return v, pool, nil
}

// CreateSnapshotOp is `lvcreate -s` (Client.CreateSnapshot): a thin snapshot in the origin's
// pool (Size 0), or a copy-on-write snapshot of Size bytes, which makes its origin an origin.
type CreateSnapshotOp struct {
	VG string
	SnapshotOptions
}

func (op CreateSnapshotOp) apply(s *State) error {
	vg, err := s.newLV(op.VG, op.Name)
	if err != nil {
		return err
	}
	oi, err := s.lvIndex(op.VG, op.Origin)
	if err != nil {
		return err
	}
	origin := s.LVs[oi]
	switch {
	case origin.Attr.IsThinPool() || origin.Hidden:
		return refuse(ErrInvalidArgument, "Snapshots of thin pool or internal volume %s are not supported.",
			origin.FullName())
	case origin.Attr.IsSnapshot():
		return refuse(ErrInvalidArgument, "Snapshots of snapshots are not supported.")
	}
	lv := LV{Name: op.Name, Origin: origin.Name, Tags: slices.Clone(op.Tags)}
	if op.Size == 0 {
		if !origin.Attr.IsThin() {
			return refuse(ErrInvalidArgument, "Snapshot of %s needs a size (not a thin volume).", origin.FullName())
		}
		lv.Size, lv.PoolLV = origin.Size, origin.PoolLV
		pool, _ := s.LV(op.VG, origin.PoolLV)
		lv.Attr = attr(VolumeTypeThin, !op.ReadOnly, TargetThin, pool.Attr.Zero)
		lv.Attr.SkipActive = !op.Activate
		if !op.Activate {
			lv.Attr.State = StateInactive
		}
		lv.Segments = []Segment{{Type: "thin", Size: lv.Size}}
		s.addLV(vg, lv)
		return nil
	}
	lv.Size = RoundUp(op.Size, vg.ExtentSize)
	rounds, err := s.allocate(vg.Name, 1, lv.Size/max(vg.ExtentSize, 1), placement{})
	if err != nil {
		return err
	}
	lv.Attr = attr(VolumeTypeSnapshot, !op.ReadOnly, TargetSnapshot, false)
	lv.Segments = segments(rounds, vg.ExtentSize)
	s.LVs[oi].Attr.VolumeType = VolumeTypeOrigin
	s.LVs[oi].Attr.TargetType = TargetSnapshot
	s.addLV(vg, lv)
	return nil
}

// ExtendLVOp is `lvextend` (Client.ExtendLV): a thick LV takes its new extents in its layout, a
// thin LV grows virtually, a thin pool grows its data (and its metadata with PoolMetadataSize).
type ExtendLVOp struct {
	VG, Name string
	ExtendOptions
}

func (op ExtendLVOp) apply(s *State) error {
	i, err := s.lvIndex(op.VG, op.Name)
	if err != nil {
		return err
	}
	vg, _ := s.VG(op.VG)
	lv := s.LVs[i]
	if lv.Attr.VolumeType == VolumeTypeOrigin && lv.Attr.Active() {
		return refuse(nil, "Snapshot origin volumes can be resized only while inactive: try lvchange -an.")
	}
	n, err := op.growth(s, vg, lv)
	if err != nil {
		return err
	}
	ext, l := max(vg.ExtentSize, 1), lv.layout()
	// Allocate everything first: a refusal must leave the LVs as they are (State.Apply).
	var meta *metadataGrowth
	if op.PoolMetadataSize > lv.MetadataSize && lv.Attr.IsThinPool() {
		if meta, err = s.allocateMetadata(vg, RoundUp(op.PoolMetadataSize, ext)/ext, lv); err != nil {
			return err
		}
	}
	var rounds []round
	if n > 0 && !lv.Attr.IsThin() {
		if rounds, err = s.allocate(vg.Name, l.Images(), n/uint64(l.DataStripes()), placement{}); err != nil {
			return err
		}
	}
	if meta != nil {
		s.growMetadata(vg, lv.Name, meta)
	}
	if n > 0 {
		s.growLV(vg, lv.Name, l, n, rounds)
	}
	return nil
}

// growth returns by how many extents op grows lv (0: op only grows a pool's metadata), or lvm2's
// refusal of the new size.
func (op ExtendLVOp) growth(s *State, vg VG, lv LV) (uint64, error) {
	if op.Size == 0 && op.Extents == "" {
		return 0, nil
	}
	ext := max(vg.ExtentSize, 1)
	target := RoundUp(op.Size, ext) / ext
	if op.Extents != "" {
		var err error
		if target, err = percentExtents(vg, uint64(len(s.PVsOf(vg.Name))), op.Extents); err != nil {
			return 0, err
		}
	}
	target = lv.layout().LVSize(target*ext, ext) / ext
	cur := lv.Size / ext
	switch {
	case target == cur:
		return 0, refuse(ErrSizeUnchanged, "New size (%d extents) matches existing size (%d extents).", target, cur)
	case target < cur:
		return 0, refuse(ErrInvalidArgument, "New size given (%d extents) not larger than existing size (%d extents)",
			target, cur)
	}
	return target - cur, nil
}

// growLV adds n extents, allocated in rounds, to LV name (thin LVs grow virtually).
func (s *State) growLV(vg VG, name string, l Layout, n uint64, rounds []round) {
	i := slices.IndexFunc(s.LVs, func(o LV) bool { return o.VGName == vg.Name && o.Name == name })
	lv := &s.LVs[i]
	if lv.Attr.IsThinPool() && lv.Size > 0 {
		// The same chunks mapped in a larger pool: its data fill level falls in proportion.
		lv.DataPercent *= float64(lv.Size) / float64(lv.Size+n*vg.ExtentSize)
	}
	lv.Size += n * vg.ExtentSize
	switch {
	case lv.Attr.IsThin():
	case l.RAID != "":
		for j := range l.Images() {
			s.appendSegments(vg.Name, fmt.Sprintf("%s_rimage_%d", name, j), image(rounds, j, vg.ExtentSize))
		}
	case lv.Attr.IsThinPool():
		s.appendSegments(vg.Name, name+"_tdata", segments(rounds, vg.ExtentSize))
	default:
		lv.Segments = slices.Concat(lv.Segments, segments(rounds, vg.ExtentSize))
		return
	}
	// The LV's one segment spans it (copied: a state shares nothing it changes with its readers).
	lv.Segments = slices.Clone(lv.Segments)
	for j := range lv.Segments {
		lv.Segments[j].Size = lv.Size
	}
}

// appendSegments adds segs to hidden LV name (if the state lists it).
func (s *State) appendSegments(vg, name string, segs []Segment) {
	if j := slices.IndexFunc(s.LVs, func(o LV) bool { return o.VGName == vg && o.Name == name }); j >= 0 {
		s.LVs[j].Segments = slices.Concat(s.LVs[j].Segments, segs)
		for _, sg := range segs {
			s.LVs[j].Size += sg.Size
		}
	}
}

// layout returns the layout of an existing LV from its first segment.
func (lv LV) layout() Layout {
	if len(lv.Segments) == 0 {
		return Layout{}
	}
	seg := lv.Segments[0]
	switch RAIDType(seg.Type) {
	case RAID1:
		return Layout{RAID: RAID1, Mirrors: seg.Stripes - 1}
	case RAID4, RAID5:
		return Layout{RAID: RAIDType(seg.Type), Stripes: seg.Stripes - 1}
	case RAID6:
		return Layout{RAID: RAID6, Stripes: seg.Stripes - 2}
	case RAID10:
		return Layout{RAID: RAID10, Stripes: seg.Stripes / 2}
	}
	if seg.Type == "striped" {
		return Layout{Stripes: seg.Stripes}
	}
	return Layout{}
}
