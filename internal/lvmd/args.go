package lvmd

import (
	"fmt"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// lvmd maps its device classes and option classes onto internal/lvm's option types, whose Args
// are the project's only lvcreate builders (free-form arguments of a class go into Extra), and
// creates through the lvm client, which checks the VG is this node's and adds the identity tags.

func validateLVName(name string) error {
	if err := lvm.ValidName(name); err != nil {
		return fmt.Errorf("%w: %q is not a valid LV name", ErrInvalidArgument, name)
	}
	return nil
}

// createOp returns the op that creates the LV of req in vg, the class's VG as cached, its size
// rounded up as lvm2 rounds it (whole extents, and per stripe). An option class replaces the class's layout and lvcreate options.
func createOp(vg lvm.VG, dc *DeviceClass, oc *LVCreateOptionClass, req CreateLVRequest, tags []string) lvm.Op {
	extra := dc.LVCreateOptions
	if oc != nil {
		extra = oc.Options
	}
	size := lvm.RoundUp(req.Size, vg.ExtentSize)
	if dc.IsThin() {
		return lvm.CreateThinLVOp{VG: vg.Name, ThinLVOptions: lvm.ThinLVOptions{
			Name: req.Name, Pool: dc.ThinPool.Name, VirtualSize: size, Tags: tags, Extra: extra,
		}}
	}
	o := lvm.LVOptions{Name: req.Name, Size: size, Tags: tags, Extra: extra}
	if oc == nil {
		setLayout(dc, &o)
	}
	o.Size = o.Layout().LVSize(req.Size, vg.ExtentSize)
	return lvm.CreateLVOp{VG: vg.Name, LVOptions: o}
}

// setLayout sets the RAID or striping of a thick class's LVs.
func setLayout(dc *DeviceClass, o *lvm.LVOptions) {
	if r := dc.RAID; r != nil {
		o.RAID, o.Mirrors, o.Stripes, o.StripeSize = r.Type, r.Mirrors, r.Stripes, r.StripeSize
		return
	}
	if dc.Stripe != nil {
		o.Stripes = int(*dc.Stripe)
	}
	o.StripeSize = dc.StripeSize
}
