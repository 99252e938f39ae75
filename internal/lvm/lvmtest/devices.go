package lvmtest

import (
	"strconv"
	"strings"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// device returns the LV whose device is path (/dev/<vg>/<lv> or /dev/mapper/<vg>-<lv>, or with
// cow, the copy-on-write device /dev/mapper/<vg>-<lv>-cow of a snapshot).
func (f *LVM) device(path string, cow bool) (lvm.LV, bool) {
	for _, lv := range f.state.LVs {
		if lv.Hidden {
			continue
		}
		if cow && path == lv.DMPath+"-cow" && lv.Attr.IsSnapshot() {
			return lv, true
		}
		if !cow && (path == lv.Path || path == lv.DMPath) {
			return lv, true
		}
	}
	return lvm.LV{}, false
}

// blkdiscard plays `blkdiscard [--force] --zeroout [--offset N --length N] <dev>` on an LV's device
// (/dev/<vg>/<lv>) that is not thin, or a snapshot's COW device, which is held by its snapshot, so
// only --force opens it, as with the real blkdiscard; anything else cannot be opened, and a range
// past the device's end is refused.
func (f *LVM) blkdiscard(argv []string) (string, int, string) {
	force := len(argv) > 0 && argv[0] == "--force"
	if force {
		argv = argv[1:]
	}
	const usage = "lvmtest: blkdiscard supports only [--force] --zeroout [--offset N --length N] DEVICE"
	if len(argv) != 2 && len(argv) != 6 || argv[0] != "--zeroout" {
		return "", 1, usage
	}
	var offset, length uint64
	if len(argv) == 6 {
		if argv[1] != "--offset" || argv[3] != "--length" {
			return "", 1, usage
		}
		var err1, err2 error
		offset, err1 = strconv.ParseUint(argv[2], 10, 64)
		length, err2 = strconv.ParseUint(argv[4], 10, 64)
		if err1 != nil || err2 != nil || offset%512 != 0 || length%512 != 0 {
			return "", 1, "blkdiscard: offset and length must be multiples of 512"
		}
	}
	dev := argv[len(argv)-1]
	lv, ok := f.device(dev, false)
	if ok && (lv.Attr.IsThin() || dev != lv.Path) {
		ok = false
	}
	if !ok && force {
		lv, ok = f.device(dev, true)
	}
	if !ok {
		return "", 1, "blkdiscard: cannot open " + dev + ": No such file or directory"
	}
	if offset+length > lv.Size {
		return "", 1, "blkdiscard: offset is greater than device size"
	}
	f.zeroed = append(f.zeroed, dev)
	return "", 0, ""
}

// blockdev plays `blockdev --getsize64 <dev>` for an LV's device: a copy-on-write snapshot's device
// is as large as its origin.
func (f *LVM) blockdev(argv []string) (string, int, string) {
	if len(argv) != 2 || argv[0] != "--getsize64" {
		return "", 1, "lvmtest: blockdev supports only --getsize64 DEVICE"
	}
	lv, ok := f.device(argv[1], false)
	if !ok {
		return "", 1, "blockdev: cannot open " + argv[1] + ": No such file or directory"
	}
	size := lv.Size
	if o, ok := f.state.LV(lv.VGName, lv.Origin); ok && lv.Attr.IsSnapshot() {
		size = o.Size
	}
	return strconv.FormatUint(size, 10) + "\n", 0, ""
}

// dd plays `dd if=<device> of=<device> ... skip=N seek=N count=N ...` between LV devices (a copy in
// chunks with byte offsets, as lvmd copies a volume): both devices must exist, the target must be
// writable, and the range must lie within both (a copy-on-write snapshot's device is as large as
// its origin).
func (f *LVM) dd(argv []string) (string, int, string) {
	kv := map[string]string{}
	for _, a := range argv {
		if k, v, ok := strings.Cut(a, "="); ok {
			kv[k] = v
		}
	}
	src, ok := f.device(kv["if"], false)
	if !ok {
		return "", 1, "dd: failed to open '" + kv["if"] + "': No such file or directory"
	}
	dst, ok := f.device(kv["of"], false)
	if !ok {
		return "", 1, "dd: failed to open '" + kv["of"] + "': No such file or directory"
	}
	if !dst.Attr.Writable() {
		return "", 1, "dd: failed to open '" + kv["of"] + "': Read-only file system"
	}
	var n [3]uint64
	for i, k := range []string{"skip", "seek", "count"} {
		var err error
		if n[i], err = strconv.ParseUint(kv[k], 10, 64); err != nil {
			return "", 1, "lvmtest: dd needs skip=, seek= and count= in bytes"
		}
	}
	size := src.Size
	if o, ok := f.state.LV(src.VGName, src.Origin); ok && src.Attr.IsSnapshot() {
		size = o.Size
	}
	if n[0]+n[2] > size || n[1]+n[2] > dst.Size {
		return "", 1, "dd: error writing '" + kv["of"] + "': No space left on device"
	}
	return "", 0, ""
}
