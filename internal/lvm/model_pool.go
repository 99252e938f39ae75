package lvm

import "slices"

// CreateThinPoolOp is `lvcreate --type thin-pool` (Client.CreateThinPool). A relative size
// (Extents) covers the data, the metadata and the VG's pool metadata spare, which the first pool
// of a VG creates; the metadata is lvm2's estimate (64 bytes per data chunk, at least 2 MiB)
// unless given.
type CreateThinPoolOp struct {
	VG string
	ThinPoolOptions
}

func (op CreateThinPoolOp) apply(s *State) error {
	vg, err := s.newLV(op.VG, op.Name)
	if err != nil {
		return err
	}
	ext := max(vg.ExtentSize, 1)
	chunk := op.ChunkSize
	if chunk == 0 {
		chunk = 64 << 10
	}
	data := RoundUp(op.Size, ext) / ext
	if op.Extents != "" {
		share, err := percentExtents(vg, uint64(len(s.PVsOf(vg.Name))), op.Extents)
		if err != nil {
			return err
		}
		data = share
	}
	meta := op.MetadataSize
	if meta == 0 {
		meta = max(2<<20, data*ext/chunk*64)
	}
	metaExt := RoundUp(meta, ext) / ext
	spare := s.spareShort(vg, metaExt)
	if op.Extents != "" {
		if data <= metaExt+spare {
			return refuse(
				ErrInsufficientSpace,
				"Volume group \"%s\" has insufficient free space (%d extents): %d required.",
				vg.Name,
				data,
				metaExt+spare+1,
			)
		}
		data -= metaExt + spare
	}
	return s.addThinPool(vg, op, data, metaExt)
}

func (s *State) addThinPool(vg VG, op CreateThinPoolOp, data, metaExt uint64) error {
	ext := vg.ExtentSize
	dataRounds, err := s.allocate(vg.Name, 1, data, placement{})
	if err != nil {
		return err
	}
	var dataPVs []string
	for _, r := range dataRounds {
		dataPVs = append(dataPVs, r[0].pv)
	}
	metaRounds, err := s.allocate(vg.Name, 1, metaExt, placement{reverse: true, avoid: dataPVs})
	if err != nil {
		return err
	}
	spareRounds, err := s.allocateSpare(vg, metaExt)
	if err != nil {
		return err
	}
	// Every extent is allocated: from here on the LVs change (State.Apply).
	s.addSpare(vg, spareRounds)
	s.addLV(vg, LV{Name: op.Name + "_tdata", Hidden: true, Size: data * ext, Segments: segments(dataRounds, ext),
		Attr: hiddenAttr(VolumeTypeThinPoolData, TargetNone)})
	s.addLV(vg, LV{Name: op.Name + "_tmeta", Hidden: true, Size: metaExt * ext, Segments: segments(metaRounds, ext),
		Attr: hiddenAttr(VolumeTypeMetadata, TargetNone)})
	s.addLV(vg, LV{Name: op.Name, Size: data * ext, MetadataSize: metaExt * ext, Tags: slices.Clone(op.Tags),
		Attr: attr(VolumeTypeThinPool, true, TargetThin, op.Zero),
		Segments: []Segment{{Type: "thin-pool", Stripes: 1, ChunkSize: op.chunk(), Size: data * ext,
			Devices: []string{op.Name + "_tdata(0)"}}}})
	return nil
}

func (o ThinPoolOptions) chunk() uint64 {
	if o.ChunkSize == 0 {
		return 64 << 10
	}
	return o.ChunkSize
}

// metadataGrowth is the extents a pool's metadata, and the VG's pool metadata spare with it, take
// to grow to metaExt extents.
type metadataGrowth struct {
	metaExt     uint64
	meta, spare []round
}

// allocateMetadata allocates the growth of pool's metadata to metaExt extents, and the spare's,
// which lvm2 keeps as large as the largest pool metadata.
func (s *State) allocateMetadata(vg VG, metaExt uint64, pool LV) (*metadataGrowth, error) {
	g := &metadataGrowth{metaExt: metaExt}
	n := metaExt - RoundUp(pool.MetadataSize, vg.ExtentSize)/vg.ExtentSize
	var err error
	if g.meta, err = s.allocate(vg.Name, 1, n, placement{reverse: true}); err != nil {
		return nil, err
	}
	if g.spare, err = s.allocateSpare(vg, metaExt); err != nil {
		return nil, err
	}
	return g, nil
}

// growMetadata applies g to pool name and the spare.
func (s *State) growMetadata(vg VG, name string, g *metadataGrowth) {
	i := slices.IndexFunc(s.LVs, func(o LV) bool { return o.VGName == vg.Name && o.Name == name })
	// The same mappings in more metadata: the fill level falls in proportion.
	if old := s.LVs[i].MetadataSize; old > 0 {
		s.LVs[i].MetadataPercent *= float64(old) / float64(g.metaExt*vg.ExtentSize)
	}
	s.LVs[i].MetadataSize = g.metaExt * vg.ExtentSize
	s.appendSegments(vg.Name, name+"_tmeta", segments(g.meta, vg.ExtentSize))
	s.addSpare(vg, g.spare)
}

// spareShort returns how many extents the VG's pool metadata spare lacks to hold metaExt extents
// of a pool's metadata.
func (s *State) spareShort(vg VG, metaExt uint64) uint64 {
	spare, _ := s.LV(vg.Name, poolMetadataSpare)
	return metaExt - min(metaExt, spare.Size/max(vg.ExtentSize, 1))
}

// allocateSpare allocates what the VG's pool metadata spare lacks to hold metaExt extents (nil
// rounds: nothing).
func (s *State) allocateSpare(vg VG, metaExt uint64) ([]round, error) {
	n := s.spareShort(vg, metaExt)
	if n == 0 {
		return nil, nil
	}
	return s.allocate(vg.Name, 1, n, placement{})
}

// addSpare creates or grows the VG's pool metadata spare by rounds.
func (s *State) addSpare(vg VG, rounds []round) {
	if len(rounds) == 0 {
		return
	}
	if _, ok := s.LV(vg.Name, poolMetadataSpare); !ok {
		s.addLV(vg, LV{Name: poolMetadataSpare, Hidden: true,
			Attr: LVAttr{VolumeType: VolumeTypeMetadata, Permission: PermissionWritable, Allocation: 'i',
				State: StateInactive, Open: '-', TargetType: TargetNone, Health: HealthOK}})
	}
	s.appendSegments(vg.Name, poolMetadataSpare, segments(rounds, vg.ExtentSize))
}

// SetThinPoolZeroOp is `lvchange --zero` of a thin pool (Client.SetThinPoolZero).
type SetThinPoolZeroOp struct {
	VG, Name string
	Zero     bool
}

func (op SetThinPoolZeroOp) apply(s *State) error {
	if _, _, err := s.thinPool(op.VG, op.Name); err != nil {
		return err
	}
	i, _ := s.lvIndex(op.VG, op.Name)
	s.LVs[i].Attr.Zero = op.Zero
	return nil
}
