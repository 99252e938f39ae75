package lvmd

import (
	"fmt"
	"slices"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// lvmd maps its device classes and option classes onto internal/lvm's option types, whose Args
// are the project's only lvcreate builders (free-form arguments of a class go into Extra).

func validateLVName(name string) error {
	if err := lvm.ValidName(name); err != nil {
		return fmt.Errorf("%w: %q is not a valid LV name", ErrInvalidArgument, name)
	}
	return nil
}

// lvTags returns the ownership tag, the identity tags of id and extra, without duplicates.
func lvTags(id lvm.Identity, extra []string) ([]string, error) {
	tags := append([]string{lvm.Tag}, id.Tags()...)
	for _, t := range extra {
		if err := lvm.ValidTag(t); err != nil {
			return nil, fmt.Errorf("%w: invalid tag %q", ErrInvalidArgument, t)
		}
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return tags, nil
}

// createArgs returns the lvcreate arguments for a new LV of size bytes (already rounded to what
// lvm2 will allocate). An option class replaces the class's layout and lvcreate options.
func createArgs(dc *DeviceClass, oc *LVCreateOptionClass, name string, size uint64, tags []string) ([]string, error) {
	extra := dc.LVCreateOptions
	if oc != nil {
		extra = oc.Options
	}
	if dc.IsThin() {
		return lvm.ThinLVOptions{
			Name:        name,
			Pool:        dc.ThinPool.Name,
			VirtualSize: size,
			Tags:        tags,
			Extra:       extra,
		}.Args(
			dc.VolumeGroup,
		)
	}
	o := lvm.LVOptions{Name: name, Size: size, Tags: tags, Extra: extra}
	if oc == nil {
		setLayout(dc, &o)
	}
	return o.Args(dc.VolumeGroup)
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

// snapshotArgs returns the lvcreate arguments for a snapshot of origin: a thin snapshot activated
// at once (cow == 0) or a copy-on-write snapshot of cow bytes.
func snapshotArgs(vg, origin, name string, cow uint64, readOnly bool, tags []string) ([]string, error) {
	return lvm.SnapshotOptions{
		Name:     name,
		Origin:   origin,
		Size:     cow,
		ReadOnly: readOnly,
		Activate: cow == 0,
		Tags:     tags,
	}.Args(
		vg,
	)
}
