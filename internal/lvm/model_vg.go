package lvm

import (
	"slices"
)

// DefaultExtentSize is lvm2's default physical extent size (vgcreate -s).
const DefaultExtentSize = 4 << 20

// peStart is where lvm2 puts a PV's first extent (pvcreate --dataalignment): the label and metadata
// area before it are not allocatable.
const peStart = 1 << 20

// poolMetadataSpare is the name of the VG's thin pool metadata spare, lvm2's copy-space for a
// metadata repair.
const poolMetadataSpare = "lvol0_pmspare"

// CreatePVOp is `pvcreate` of a device of Size bytes (Client.CreatePVs).
type CreatePVOp struct {
	Device string
	Size   uint64
}

func (op CreatePVOp) apply(s *State) error {
	if _, ok := s.PV(op.Device); ok {
		return refuse(ErrAlreadyExists, "Physical volume \"%s\" already exists.", op.Device)
	}
	s.PVs = append(s.PVs, PV{Name: op.Device, UUID: "model-pv-" + op.Device, Attr: "---", Size: op.Size,
		Free: op.Size, DevSize: op.Size})
	return nil
}

// CreateVGOp is `vgcreate` on orphan PVs (Client.CreateVG, after CreatePVOp for devices that are
// not PVs yet); ExtentSize 0 is lvm2's default.
type CreateVGOp struct {
	Name       string
	Devices    []string
	Tags       []string
	ExtentSize uint64
}

func (op CreateVGOp) apply(s *State) error {
	if _, ok := s.VG(op.Name); ok {
		return refuse(ErrAlreadyExists, "A volume group called %s already exists.", op.Name)
	}
	ext := op.ExtentSize
	if ext == 0 {
		ext = DefaultExtentSize
	}
	s.VGs = append(s.VGs, VG{Name: op.Name, UUID: "model-vg-" + op.Name, Attr: "wz--n-", ExtentSize: ext,
		Tags: slices.Clone(op.Tags)})
	return s.addPVs(op.Name, op.Devices)
}

// addPVs moves orphan PVs devs into VG vg, in whole extents.
func (s *State) addPVs(vg string, devs []string) error {
	vi, err := s.vgIndex(vg)
	if err != nil {
		return err
	}
	v := &s.VGs[vi]
	for _, d := range devs {
		i := slices.IndexFunc(s.PVs, func(pv PV) bool { return pv.Name == d })
		switch {
		case i < 0:
			return refuse(ErrNotFound, "Failed to find physical volume \"%s\".", d)
		case !s.PVs[i].Orphan():
			return refuse(
				ErrInvalidArgument,
				"Physical volume '%s' is already in volume group '%s'",
				d,
				s.PVs[i].VGName,
			)
		}
		pv := &s.PVs[i]
		n := (pv.DevSize - min(pv.DevSize, peStart)) / v.ExtentSize
		pv.VGName, pv.Attr, pv.Size, pv.Free = vg, "a--", n*v.ExtentSize, n*v.ExtentSize
		v.ExtentCount += n
		v.FreeCount += n
	}
	v.Size, v.Free = v.ExtentCount*v.ExtentSize, v.FreeCount*v.ExtentSize
	return nil
}

// ExtendVGOp is `vgextend` with orphan PVs (Client.ExtendVG).
type ExtendVGOp struct {
	VG      string
	Devices []string
}

func (op ExtendVGOp) apply(s *State) error { return s.addPVs(op.VG, op.Devices) }

// ReduceVGOp is `vgreduce` of unused PVs (Client.ReduceVG); they become orphans.
type ReduceVGOp struct {
	VG      string
	Devices []string
}

func (op ReduceVGOp) apply(s *State) error {
	vi, err := s.vgIndex(op.VG)
	if err != nil {
		return err
	}
	v := &s.VGs[vi]
	for _, d := range op.Devices {
		i := slices.IndexFunc(s.PVs, func(pv PV) bool { return pv.Name == d && pv.VGName == op.VG })
		switch {
		case i < 0:
			return refuse(ErrNotFound, "Physical Volume \"%s\" not found in Volume Group \"%s\".", d, op.VG)
		case s.PVs[i].Free != s.PVs[i].Size:
			return refuse(nil, "Physical volume \"%s\" still in use", d)
		}
		pv := &s.PVs[i]
		n := pv.Size / v.ExtentSize
		v.ExtentCount, v.FreeCount = v.ExtentCount-n, v.FreeCount-n
		pv.VGName, pv.Attr, pv.Size, pv.Free = "", "---", pv.DevSize, pv.DevSize
	}
	v.Size, v.Free = v.ExtentCount*v.ExtentSize, v.FreeCount*v.ExtentSize
	return nil
}

// RemoveVGOp is `vgremove` without force (Client.RemoveVG): refused while the VG holds LVs; its PVs
// become orphans.
type RemoveVGOp struct {
	VG string
}

func (op RemoveVGOp) apply(s *State) error {
	vi, err := s.vgIndex(op.VG)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(s.LVs, func(lv LV) bool { return lv.VGName == op.VG }) {
		// lvm2 asks whether to remove the LVs too; the question reads end of input.
		return refuse(nil, "Volume group \"%s\" not removed", op.VG)
	}
	for i := range s.PVs {
		if pv := &s.PVs[i]; pv.VGName == op.VG {
			pv.VGName, pv.Attr, pv.Size, pv.Free = "", "---", pv.DevSize, pv.DevSize
		}
	}
	s.VGs = slices.Delete(s.VGs, vi, vi+1)
	return nil
}

// RemovePVOp is `pvremove` of an orphan PV (Client.RemovePV).
type RemovePVOp struct {
	Device string
}

func (op RemovePVOp) apply(s *State) error {
	i := slices.IndexFunc(s.PVs, func(pv PV) bool { return pv.Name == op.Device })
	switch {
	case i < 0:
		return refuse(ErrNotFound, "No PV found on device %s.", op.Device)
	case !s.PVs[i].Orphan():
		return refuse(ErrInvalidArgument, "PV %s is used by VG %s so please use vgreduce first.",
			op.Device, s.PVs[i].VGName)
	}
	s.PVs = slices.Delete(s.PVs, i, i+1)
	return nil
}

// AddVGTagsOp is `vgchange --addtag` (Client.AddVGTags).
type AddVGTagsOp struct {
	VG   string
	Tags []string
}

func (op AddVGTagsOp) apply(s *State) error {
	vi, err := s.vgIndex(op.VG)
	if err != nil {
		return err
	}
	s.VGs[vi].Tags = addTags(s.VGs[vi].Tags, op.Tags)
	return nil
}
