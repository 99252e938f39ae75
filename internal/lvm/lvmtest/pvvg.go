package lvmtest

import (
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// pvvg translates the PV and VG commands into the model's ops; f.mu held.
func (f *LVM) pvvg(sub string, a args) ([]lvm.Op, error) {
	switch sub {
	case "pvcreate":
		return f.pvcreate(a.pos, false)
	case "pvremove":
		var ops []lvm.Op
		for _, d := range a.pos {
			ops = append(ops, lvm.RemovePVOp{Device: d})
		}
		return ops, nil
	case "vgcreate":
		if len(a.pos) < 2 {
			return nil, invalid("Please provide volume group name and physical volumes")
		}
		ops, err := f.pvcreate(a.pos[1:], true)
		return append(ops, lvm.CreateVGOp{Name: a.pos[0], Devices: a.pos[1:], Tags: a.opts["--addtag"]}), err
	case "vgextend":
		if len(a.pos) < 2 {
			return nil, invalid("Please enter volume group name and physical volume(s)")
		}
		ops, err := f.pvcreate(a.pos[1:], true)
		return append(ops, lvm.ExtendVGOp{VG: a.pos[0], Devices: a.pos[1:]}), err
	case "vgreduce":
		if len(a.pos) < 2 {
			return nil, invalid("Please give volume group name and physical volume paths")
		}
		return []lvm.Op{lvm.ReduceVGOp{VG: a.pos[0], Devices: a.pos[1:]}}, nil
	case "vgremove":
		if len(a.pos) != 1 {
			return nil, invalid("Please enter one volume group name")
		}
		return []lvm.Op{lvm.RemoveVGOp{VG: a.pos[0]}}, nil
	case "vgchange":
		return f.vgchange(a)
	}
	return nil, invalid("lvmtest: unsupported subcommand %s", sub)
}

// pvcreate initialises devices; with implicit (vgcreate, vgextend) devices that are PVs already
// are left as they are.
func (f *LVM) pvcreate(devs []string, implicit bool) ([]lvm.Op, error) {
	var ops []lvm.Op
	for _, d := range devs {
		if _, ok := f.state.PV(d); ok && implicit {
			continue
		}
		size, ok := f.devices[d]
		if !ok {
			return nil, refuse(lvm.ErrNotFound, "No device found for %s.", d)
		}
		ops = append(ops, lvm.CreatePVOp{Device: d, Size: size})
	}
	return ops, nil
}

func (f *LVM) vgchange(a args) ([]lvm.Op, error) {
	if len(a.pos) != 1 {
		return nil, invalid("Please specify one volume group")
	}
	vg := a.pos[0]
	if a.has("--addtag") {
		return []lvm.Op{lvm.AddVGTagsOp{VG: vg, Tags: a.opts["--addtag"]}}, nil
	}
	if !a.has("-ay") && !a.has("-an") {
		return nil, invalid("lvmtest: unsupported vgchange")
	}
	var ops []lvm.Op
	for _, lv := range f.state.LVsOf(vg) {
		ops = append(ops, lvm.ActivateLVOp{VG: vg, Name: lv.Name, Active: a.has("-ay")})
	}
	return ops, nil
}
