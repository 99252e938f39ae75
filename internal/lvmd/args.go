package lvmd

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// lvmd builds its own lvcreate command lines (instead of internal/lvm's
// typed options) because device classes and option classes carry free-form
// lvcreate arguments. Failures are still classified by internal/lvm.

// validTagRE is lvm2's tag character set (lvm(8) "Tags").
var validTagRE = regexp.MustCompile(`^[a-zA-Z0-9_+.\-/=!:&#]{1,1000}$`)

func validateLVName(name string) error {
	if !lvmNameRE.MatchString(name) || name == "." || name == ".." {
		return fmt.Errorf("%w: %q is not a valid LV name", ErrInvalidArgument, name)
	}
	return nil
}

// lvTags returns the ownership tag followed by extra, without duplicates.
func lvTags(extra []string) ([]string, error) {
	tags := []string{lvm.Tag}
	for _, t := range extra {
		if !validTagRE.MatchString(t) {
			return nil, fmt.Errorf("%w: invalid tag %q", ErrInvalidArgument, t)
		}
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return tags, nil
}

func tagArgs(tags []string) []string {
	var args []string
	for _, t := range tags {
		args = append(args, "--addtag", t)
	}
	return args
}

// bytesArg renders a size for -L/-V; sizes are whole extents already.
func bytesArg(n uint64) string { return strconv.FormatUint(n, 10) + "b" }

// createArgs returns the lvcreate arguments for a new LV of size bytes
// (already rounded to what lvm2 will allocate).
func createArgs(dc *DeviceClass, oc *LVCreateOptionClass, name string, size uint64, tags []string) []string {
	args := []string{"lvcreate", "-y", "--wipesignatures", "y", "-n", name}
	if dc.IsThin() {
		args = append(args, "--type", "thin", "-V", bytesArg(size), "--thinpool", dc.ThinPool.Name)
	} else {
		args = append(args, "-L", bytesArg(size))
		if oc == nil {
			args = append(args, layoutArgs(dc)...)
		}
	}
	if oc != nil {
		args = append(args, oc.Options...)
	} else {
		args = append(args, dc.LVCreateOptions...)
	}
	args = append(args, tagArgs(tags)...)
	return append(args, dc.VolumeGroup)
}

// layoutArgs returns the RAID or striping arguments of a thick class.
func layoutArgs(dc *DeviceClass) []string {
	var args []string
	if r := dc.RAID; r != nil {
		args = append(args, "--type", string(r.Type))
		if r.Mirrors > 0 {
			args = append(args, "-m", strconv.Itoa(r.Mirrors))
		}
		if r.Stripes > 0 {
			args = append(args, "-i", strconv.Itoa(r.Stripes))
		}
		if r.StripeSize != "" {
			args = append(args, "-I", r.StripeSize)
		}
		return args
	}
	if dc.Stripe != nil {
		args = append(args, "-i", strconv.FormatUint(uint64(*dc.Stripe), 10))
	}
	if dc.StripeSize != "" {
		args = append(args, "-I", dc.StripeSize)
	}
	return args
}

// snapshotArgs returns the lvcreate arguments for a snapshot of origin: a
// thin snapshot activated at once (cow == 0) or a copy-on-write snapshot of
// cow bytes.
func snapshotArgs(vg, origin, name string, cow uint64, readOnly bool, tags []string) []string {
	args := []string{"lvcreate", "-y", "-s", "-n", name}
	if cow > 0 {
		args = append(args, "-L", bytesArg(cow))
	} else {
		args = append(args, "--setactivationskip", "n")
	}
	if readOnly {
		args = append(args, "-p", "r")
	}
	args = append(args, tagArgs(tags)...)
	return append(args, vg+"/"+origin)
}
