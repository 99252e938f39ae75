package lvm

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// area is a run of extents on one PV.
type area struct {
	pv           string
	start, count uint64
}

func (a area) device() string { return a.pv + "(" + strconv.FormatUint(a.start, 10) + ")" }

// round is one allocation round: the same number of extents from each of k PVs.
type round []area

// placement is how lvm2 orders the PVs for an allocation.
type placement struct {
	// reverse takes the PVs from the end of the list (a thin pool's metadata).
	reverse bool
	// avoid lists PVs to take last (the PVs of a pool's data, for its metadata).
	avoid []string
}

// allocate takes k parallel areas of need extents each from the allocatable PVs of VG vg, as lvm2
// does (measured on real lvm2: TestGuestModelFollowsLVM2): when k PVs can each hold a whole area,
// the first k of them in the PVs' order (as p orders them); otherwise in rounds over the PVs with
// the most free extents (Layout), which is also the most lvm2 can allocate. A VG whose PVs the
// state does not list gives its free extents without placement (no rounds).
func (s *State) allocate(vg string, k int, need uint64, p placement) ([]round, error) {
	vi, err := s.vgIndex(vg)
	if err != nil {
		return nil, err
	}
	v := &s.VGs[vi]
	if v.FreeCount < uint64(k)*need || v.ExtentSize == 0 {
		return nil, refuse(
			ErrInsufficientSpace,
			"Volume group \"%s\" has insufficient free space (%d extents): %d required.",
			vg,
			v.FreeCount,
			uint64(k)*need,
		)
	}
	var idx []int
	for i, pv := range s.PVs {
		if pv.VGName == vg && (pv.Attr == "" || pv.Attr[0] == 'a') {
			idx = append(idx, i)
		}
	}
	if p.reverse {
		slices.Reverse(idx)
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Compare(b2i(slices.Contains(p.avoid, s.PVs[a].Name)), b2i(slices.Contains(p.avoid, s.PVs[b].Name)))
	})
	var rounds []round
	if len(s.PVsOf(vg)) > 0 {
		whole := slices.DeleteFunc(slices.Clone(idx), func(i int) bool { return s.PVs[i].Free/v.ExtentSize < need })
		if len(whole) >= k {
			idx = whole[:k]
		}
		if rounds, err = s.allocateRounds(v, idx, k, need); err != nil {
			return nil, err
		}
	}
	v.FreeCount -= uint64(k) * need
	v.Free = v.FreeCount * v.ExtentSize
	return rounds, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// allocateRounds takes the rounds from the PVs at idx (AllocateRounds' arithmetic).
func (s *State) allocateRounds(v *VG, idx []int, k int, need uint64) ([]round, error) {
	if len(idx) < k {
		return nil, refuse(ErrInsufficientSpace,
			"Number of stripes (%d) must not exceed number of physical volumes (%d)", k, len(idx))
	}
	free := func(i int) uint64 { return s.PVs[i].Free / v.ExtentSize }
	// pick returns the k PVs with the most free extents, in idx's order among equals; nil when
	// fewer than k have any.
	pick := func() []int {
		var c []int
		for _, i := range idx {
			if free(i) > 0 {
				c = append(c, i)
			}
		}
		slices.SortStableFunc(c, func(a, b int) int { return cmp.Compare(free(b), free(a)) })
		if len(c) < k {
			return nil
		}
		return c[:k]
	}
	var rounds []round
	for taken := uint64(0); taken < need; {
		pvs := pick()
		if pvs == nil {
			return nil, refuse(
				ErrInsufficientSpace,
				"Insufficient suitable allocatable extents for logical volume: %d more required",
				(need-taken)*uint64(k),
			)
		}
		take := min(free(pvs[k-1]), need-taken)
		r := make(round, k)
		for j, i := range pvs {
			pv := &s.PVs[i]
			r[j] = area{pv: pv.Name, start: (pv.Size - pv.Free) / v.ExtentSize, count: take}
			pv.Free -= take * v.ExtentSize
		}
		rounds = append(rounds, r)
		taken += take
	}
	return rounds, nil
}

// segments returns the LV segments of rounds: one per round, striped over its areas.
func segments(rounds []round, extent uint64) []Segment {
	out := make([]Segment, 0, len(rounds))
	for _, r := range rounds {
		seg := Segment{Type: "linear", Stripes: len(r), Size: uint64(len(r)) * r[0].count * extent}
		if len(r) > 1 {
			seg.Type = "striped"
		}
		for _, a := range r {
			seg.Devices = append(seg.Devices, a.device())
		}
		out = append(out, seg)
	}
	return out
}

// image returns area j of every round as linear segments (a RAID image's extents).
func image(rounds []round, j int, extent uint64) []Segment {
	out := make([]Segment, 0, len(rounds))
	for _, r := range rounds {
		out = append(out, Segment{Type: "linear", Stripes: 1, Size: r[j].count * extent,
			Devices: []string{r[j].device()}})
	}
	return out
}

// release removes LV i of the state and the hidden sub-LVs it is built on, and returns their
// extents to their PVs and the VG. The extents of sub-LVs the state does not list (a report
// without hidden LVs) are returned to the VG only, by the layout's arithmetic.
func (s *State) release(i int) {
	vg := s.LVs[i].VGName
	vi, err := s.vgIndex(vg)
	if err != nil {
		return
	}
	ext := s.VGs[vi].ExtentSize
	freed := s.releaseExtents(i, ext)
	s.VGs[vi].FreeCount += freed
	s.VGs[vi].Free = s.VGs[vi].FreeCount * ext
}

// releaseExtents removes LV i and its sub-LVs, returns their PV extents to the PVs, and returns
// how many extents that frees in the VG.
func (s *State) releaseExtents(i int, ext uint64) uint64 {
	lv := s.LVs[i]
	s.LVs = slices.Delete(s.LVs, i, i+1)
	var freed uint64
	for _, seg := range lv.Segments {
		for _, d := range seg.Devices {
			if name, _, _ := strings.Cut(d, "("); strings.HasPrefix(name, "/") && ext > 0 {
				n := seg.Size / ext / uint64(len(seg.Devices))
				s.givePV(name, n*ext)
				freed += n
			}
		}
	}
	var subs []string
	for _, o := range s.LVs {
		if o.VGName == lv.VGName && o.Hidden && IsSubLV(lv.Name, o.Name) {
			subs = append(subs, o.Name)
		}
	}
	for _, name := range subs {
		if j := slices.IndexFunc(s.LVs, func(o LV) bool { return o.VGName == lv.VGName && o.Name == name }); j >= 0 {
			freed += s.releaseExtents(j, ext)
		}
	}
	if len(subs) == 0 && ext > 0 {
		freed += estimateSubExtents(lv, ext)
	}
	return freed
}

// estimateSubExtents returns the extents of lv's sub-LVs by the layout's arithmetic.
func estimateSubExtents(lv LV, ext uint64) uint64 {
	switch l := lv.layout(); {
	case lv.SegType() == "thin-pool":
		return RoundUp(lv.Size, ext)/ext + RoundUp(lv.MetadataSize, ext)/ext
	case l.RAID != "":
		return l.PhysicalExtents(lv.Size / ext)
	}
	return 0
}

// Placed reports whether the state knows on which PVs the extents of LV vg/name lie: its segments
// name PVs, or sub-LVs the state lists with theirs. A state read lists no sub-LVs; State.Apply adds
// them for the LVs it creates. A thin LV has no extents of its own.
func (s *State) Placed(vg, name string) bool {
	lv, ok := s.LV(vg, name)
	if !ok || lv.Attr.IsThin() {
		return ok
	}
	if lv.Attr.IsThinPool() && !s.Placed(vg, name+"_tmeta") {
		return false
	}
	for _, seg := range lv.Segments {
		for _, d := range seg.Devices {
			if sub, _, _ := strings.Cut(d, "("); !strings.HasPrefix(sub, "/") && !s.Placed(vg, sub) {
				return false
			}
		}
	}
	return len(lv.Segments) > 0
}

// givePV returns bytes to PV name's free space.
func (s *State) givePV(name string, bytes uint64) {
	if i := slices.IndexFunc(s.PVs, func(pv PV) bool { return pv.Name == name }); i >= 0 {
		s.PVs[i].Free = min(s.PVs[i].Free+bytes, s.PVs[i].Size)
	}
}

// IsSubLV reports whether sub names a hidden sub-LV of LV lv: a RAID or mirror image, its
// metadata or log, or a thin pool's data or metadata.
func IsSubLV(lv, sub string) bool {
	rest, ok := strings.CutPrefix(sub, lv+"_")
	if !ok {
		return false
	}
	for _, p := range []string{"rimage_", "rmeta_", "mimage_", "mlog", "tdata", "tmeta"} {
		if strings.HasPrefix(rest, p) {
			return true
		}
	}
	return false
}

// percentExtents resolves an lvm2 relative size ("90%FREE", or a plain extent count) in VG v.
func percentExtents(v VG, pvs uint64, e Extents) (uint64, error) {
	if !extentsRE.MatchString(string(e)) {
		return 0, refuse(ErrInvalidArgument, "Invalid argument for --extents: %s", e)
	}
	num, base, ok := strings.Cut(string(e), "%")
	n, _ := strconv.ParseUint(num, 10, 64)
	if !ok {
		return n, nil
	}
	total := map[string]uint64{"FREE": v.FreeCount, "VG": v.ExtentCount, "PVS": pvs}[base]
	if base == "ORIGIN" {
		return 0, refuse(ErrInvalidArgument, "%s: %%ORIGIN is for snapshots", e)
	}
	return n * total / 100, nil
}
