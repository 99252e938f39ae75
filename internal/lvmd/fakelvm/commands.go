package fakelvm

import (
	"slices"
	"strconv"
	"strings"
)

// lvcreate handles thick, thin, RAID/striped (extent accounting only) and
// snapshot creates.
func (f *LVM) lvcreate(a args) error {
	if len(a.pos) != 1 {
		return failf(3, "Please specify a volume group or origin")
	}
	vgName, origin, _ := strings.Cut(a.pos[0], "/")
	v, err := f.findVG(vgName)
	if err != nil {
		return err
	}
	name := a.get("-n")
	if name == "" {
		return failf(3, "Please specify a logical volume name")
	}
	if v.lv(name) != nil {
		return failf(5, "Logical Volume \"%s\" already exists in volume group \"%s\"", name, v.name)
	}
	l := &lv{name: name, tags: a.opts["--addtag"], uuid: f.uuid()}
	perm := byte('w')
	if a.get("-p") == "r" {
		perm = 'r'
	}
	switch {
	case a.has("-s"):
		err = f.snapshot(v, l, origin, a, perm)
	case a.get("--type") == "thin" || a.has("--thinpool"):
		err = thin(v, l, a, perm)
	default:
		err = thick(v, l, a, perm)
	}
	if err != nil {
		return err
	}
	v.lvs = append(v.lvs, l)
	return nil
}

func thin(v *vg, l *lv, a args, perm byte) error {
	pool := v.lv(a.get("--thinpool"))
	if pool == nil || pool.attr[0] != 't' {
		return failf(5, "Failed to find logical volume \"%s/%s\"", v.name, a.get("--thinpool"))
	}
	size, err := parseBytes(a.get("-V"))
	if err != nil {
		return err
	}
	l.size, l.pool, l.attr = ceil(
		size,
		v.extent,
	)*v.extent, pool.name, []byte{
		'V',
		perm,
		'i',
		'-',
		'a',
		'-',
		't',
		'z',
		'-',
		'-',
	}
	return nil
}

func thick(v *vg, l *lv, a args, perm byte) error {
	size, err := parseBytes(a.get("-L"))
	if err != nil {
		return err
	}
	stripes, mirrors := atoi(a.get("-i")), atoi(a.get("-m"))
	ext := ceil(size, v.extent)
	data := max(stripes, 1)
	images := uint64(1)
	switch a.get("--type") {
	case "raid1":
		images = uint64(max(mirrors, 1) + 1)
	case "raid5", "raid4":
		data = max(stripes, 2)
		images = uint64(data + 1)
	case "raid6":
		data = max(stripes, 3)
		images = uint64(data + 2)
	case "raid10":
		data = max(stripes, 2)
		images = uint64(data * (max(mirrors, 1) + 1))
	}
	ext = ceil(ext, uint64(data)) * uint64(data)
	phys := ext
	if images > 1 {
		phys = images * (ext/uint64(data) + 1)
	}
	if phys > v.freeExtents() {
		return failf(
			5,
			"Volume group \"%s\" has insufficient free space (%d extents): %d required.",
			v.name,
			v.freeExtents(),
			phys,
		)
	}
	l.size, l.physical, l.attr = ext*v.extent, phys, []byte{'-', perm, 'i', '-', 'a', '-', '-', '-', '-', '-'}
	return nil
}

func (f *LVM) snapshot(v *vg, l *lv, originName string, a args, perm byte) error {
	origin := v.lv(originName)
	if origin == nil {
		return failf(5, "Failed to find logical volume \"%s/%s\"", v.name, originName)
	}
	l.origin = origin.name
	if !a.has("-L") {
		if origin.attr[0] != 'V' {
			return failf(3, "Snapshot of %s needs a size (not a thin volume)", originName)
		}
		l.size, l.pool = origin.size, origin.pool
		l.attr = []byte{'V', perm, 'i', '-', 'a', '-', 't', 'z', '-', '-'}
		return nil
	}
	size, err := parseBytes(a.get("-L"))
	if err != nil {
		return err
	}
	ext := ceil(size, v.extent)
	if ext > v.freeExtents() {
		return failf(
			5,
			"Volume group \"%s\" has insufficient free space (%d extents): %d required.",
			v.name,
			v.freeExtents(),
			ext,
		)
	}
	l.size, l.physical = ext*v.extent, ext
	l.attr = []byte{'s', perm, 'i', '-', 'a', '-', 's', '-', '-', '-'}
	origin.attr[0] = 'o'
	return nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func (f *LVM) target(a args) (*vg, *lv, error) {
	if len(a.pos) != 1 {
		return nil, nil, failf(3, "Please specify one logical volume path")
	}
	vgName, name, _ := strings.Cut(a.pos[0], "/")
	v, err := f.findVG(vgName)
	if err != nil {
		return nil, nil, err
	}
	l := v.lv(name)
	if l == nil {
		return nil, nil, failf(5, "Failed to find logical volume \"%s/%s\"", vgName, name)
	}
	return v, l, nil
}

// lvremove removes LVs (and the copy-on-write snapshots of an origin). Like lvm2, it goes on past
// an LV it cannot remove and fails at the end (exit 5) with every LV's message.
func (f *LVM) lvremove(a args) error {
	if len(a.pos) == 0 {
		return failf(3, "Please enter one or more logical volume paths.")
	}
	var msgs []string
	for _, p := range a.pos {
		if err := f.lvremoveOne(p); err != nil {
			msgs = append(msgs, strings.TrimSpace(err.Error()))
		}
	}
	if len(msgs) > 0 {
		return failf(5, "%s", strings.Join(msgs, "\n  "))
	}
	return nil
}

func (f *LVM) lvremoveOne(path string) error {
	v, l, err := f.target(args{pos: []string{path}})
	if err != nil {
		return err
	}
	if l.attr[5] == 'o' {
		return failf(5, "Logical volume %s/%s contains a filesystem in use.", v.name, l.name)
	}
	keep := v.lvs[:0]
	for _, o := range v.lvs {
		if o == l || (o.origin == l.name && o.attr[0] == 's') {
			continue
		}
		if o.origin == l.name && o.attr[0] == 'V' {
			o.origin = ""
		}
		keep = append(keep, o)
	}
	v.lvs = keep
	return nil
}

// lvrename renames an LV (`lvrename VG OLD NEW`); snapshots follow their origin.
func (f *LVM) lvrename(a args) error {
	if len(a.pos) != 3 {
		return failf(3, "Old and new logical volume names required")
	}
	v, err := f.findVG(a.pos[0])
	if err != nil {
		return err
	}
	l := v.lv(a.pos[1])
	if l == nil {
		return failf(5, "Existing logical volume \"%s\" not found in volume group \"%s\"", a.pos[1], v.name)
	}
	if v.lv(a.pos[2]) != nil {
		return failf(5, "Logical Volume \"%s\" already exists in volume group \"%s\"", a.pos[2], v.name)
	}
	for _, o := range v.lvs {
		if o.origin == l.name {
			o.origin = a.pos[2]
		}
	}
	l.name = a.pos[2]
	return nil
}

// lvextend grows an LV (-L <n>b), rounding like lvm2.
func (f *LVM) lvextend(a args) error {
	v, l, err := f.target(a)
	if err != nil {
		return err
	}
	size, err := parseBytes(a.get("-L"))
	if err != nil {
		return err
	}
	ext := ceil(size, v.extent)
	cur := l.size / v.extent
	switch {
	case ext == cur:
		return failf(5, "New size (%d extents) matches existing size (%d extents).", ext, cur)
	case ext < cur:
		return failf(5, "New size given (%d extents) not larger than existing size (%d extents)", ext, cur)
	}
	if l.attr[0] != 'V' {
		if ext-cur > v.freeExtents() {
			return failf(
				5,
				"Insufficient free space: %d extents needed, but only %d available",
				ext-cur,
				v.freeExtents(),
			)
		}
		l.physical += ext - cur
	}
	l.size = ext * v.extent
	return nil
}

// blkdiscard plays `blkdiscard [--force] --zeroout [--offset N --length N] <dev>` on an LV's device
// (/dev/<vg>/<lv>) or a snapshot's COW device (/dev/mapper/<vg>-<lv>-cow, names with "-" doubled);
// anything else cannot be opened, and a range past the device's end is refused.
func (f *LVM) blkdiscard(argv []string) (string, int, string) {
	force := len(argv) > 0 && argv[0] == "--force"
	if force {
		argv = argv[1:]
	}
	const usage = "fakelvm: blkdiscard supports only [--force] --zeroout [--offset N --length N] DEVICE"
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
	for _, v := range f.vgs {
		for _, l := range v.lvs {
			cow := "/dev/mapper/" + strings.ReplaceAll(v.name, "-", "--") + "-" +
				strings.ReplaceAll(l.name, "-", "--") + "-cow"
			// The COW device is held by its snapshot: only --force opens it, as with the real blkdiscard.
			if dev == "/dev/"+v.name+"/"+l.name && l.attr[0] != 'V' || dev == cow && l.attr[0] == 's' && force {
				if offset+length > l.size {
					return "", 1, "blkdiscard: offset is greater than device size"
				}
				f.zeroed = append(f.zeroed, dev)
				return "", 0, ""
			}
		}
	}
	return "", 1, "blkdiscard: cannot open " + dev + ": No such file or directory"
}

// blockdev plays `blockdev --getsize64 <dev>` for an LV's device (/dev/<vg>/<lv> or
// /dev/mapper/<vg>-<lv>): a copy-on-write snapshot's device is as large as its origin.
func (f *LVM) blockdev(argv []string) (string, int, string) {
	if len(argv) != 2 || argv[0] != "--getsize64" {
		return "", 1, "fakelvm: blockdev supports only --getsize64 DEVICE"
	}
	for _, v := range f.vgs {
		for _, l := range v.lvs {
			mapper := "/dev/mapper/" + strings.ReplaceAll(
				v.name,
				"-",
				"--",
			) + "-" + strings.ReplaceAll(
				l.name,
				"-",
				"--",
			)
			if argv[1] != "/dev/"+v.name+"/"+l.name && argv[1] != mapper {
				continue
			}
			size := l.size
			if l.attr[0] == 's' {
				if o := v.lv(l.origin); o != nil {
					size = o.size
				}
			}
			return strconv.FormatUint(size, 10) + "\n", 0, ""
		}
	}
	return "", 1, "blockdev: cannot open " + argv[1] + ": No such file or directory"
}

// Zeroed returns the devices blkdiscard --zeroout was run on, in order.
func (f *LVM) Zeroed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.zeroed)
}
