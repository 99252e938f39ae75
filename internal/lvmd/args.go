package lvmd

import (
	"context"
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

// createLV creates LV name of size bytes (already rounded to what lvm2 will allocate) in vg, the
// class's VG as cached, through the lvm client. An option class replaces the class's layout and
// lvcreate options.
func (s *Service) createLV(
	ctx context.Context, vg lvm.VG, dc *DeviceClass, oc *LVCreateOptionClass, name string, size uint64, tags []string,
) error {
	extra := dc.LVCreateOptions
	if oc != nil {
		extra = oc.Options
	}
	if dc.IsThin() {
		return s.lvm.CreateThinLV(ctx, vg, lvm.ThinLVOptions{
			Name: name, Pool: dc.ThinPool.Name, VirtualSize: size, Tags: tags, Extra: extra,
		})
	}
	o := lvm.LVOptions{Name: name, Size: size, Tags: tags, Extra: extra}
	if oc == nil {
		setLayout(dc, &o)
	}
	return s.lvm.CreateLV(ctx, vg, o)
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

// createSnapshot creates snapshot name of origin in vg through the lvm client: a thin snapshot
// activated at once (cow == 0) or a copy-on-write snapshot of cow bytes.
func (s *Service) createSnapshot(
	ctx context.Context, vg lvm.VG, origin, name string, cow uint64, readOnly bool, tags []string,
) error {
	return s.lvm.CreateSnapshot(ctx, vg, lvm.SnapshotOptions{
		Name: name, Origin: origin, Size: cow, ReadOnly: readOnly, Activate: cow == 0, Tags: tags,
	})
}
