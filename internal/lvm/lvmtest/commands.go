package lvmtest

import (
	"slices"
	"strconv"
	"strings"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// args are parsed lvm arguments: options with their values, flags, and positional arguments.
type args struct {
	opts map[string][]string
	pos  []string
}

var valueOpts = []string{
	"-n", "-L", "-V", "-l", "-i", "-I", "-m", "-p", "-Z", "-W", "-c", "--type", "--thinpool", "--addtag",
	"--setactivationskip", "--wipesignatures", "--alloc", "--reportformat", "--units", "--configreport", "-o",
	"--config", "--poolmetadatasize", "--zero", "--readahead",
}

func parseArgs(list []string) (args, error) {
	a := args{opts: map[string][]string{}}
	for i := 0; i < len(list); i++ {
		arg := list[i]
		switch {
		case slices.Contains(valueOpts, arg):
			if i+1 >= len(list) {
				return a, invalid("Option %s requires an argument", arg)
			}
			a.opts[arg] = append(a.opts[arg], list[i+1])
			i++
		case strings.HasPrefix(arg, "-"):
			a.opts[arg] = append(a.opts[arg], "")
		default:
			a.pos = append(a.pos, arg)
		}
	}
	return a, nil
}

func (a args) get(opt string) string {
	if v := a.opts[opt]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

func (a args) has(opt string) bool { return len(a.opts[opt]) > 0 }

var refuse = lvm.Refusal

// invalid is lvm2's refusal of a command line (exit status 3).
func invalid(format string, v ...any) error { return refuse(lvm.ErrInvalidArgument, format, v...) }

// bytes parses the "<n>b" sizes the Client writes ("" is 0); other units are refused.
func (a args) bytes(opt string) (uint64, error) {
	s := a.get(opt)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(s, "b"), 10, 64)
	if err != nil || !strings.HasSuffix(s, "b") {
		return 0, invalid("Invalid argument for %s: %s (lvmtest understands <n>b only)", opt, s)
	}
	return n, nil
}

func (a args) int(opt string) int {
	n, _ := strconv.Atoi(a.get(opt))
	return n
}

// one returns the single positional argument "vg/lv" split.
func (a args) one() (string, string, error) {
	if len(a.pos) != 1 {
		return "", "", invalid("Please specify one logical volume path")
	}
	vg, lv, _ := strings.Cut(a.pos[0], "/")
	return vg, lv, nil
}

// command runs lvm subcommand sub; f.mu held.
func (f *LVM) command(sub string, a args) (string, error) {
	if sub == "fullreport" {
		return report(f.state, a.pos, a.has("--all"))
	}
	ops, err := f.ops(sub, a)
	if err != nil {
		return "", err
	}
	return "", f.apply(sub, ops)
}

// apply applies the ops of one command. lvremove goes on past an LV it cannot remove and fails
// at the end with every LV's message, as lvm2 does; other commands stop at the first refusal.
func (f *LVM) apply(sub string, ops []lvm.Op) error {
	var errs []string
	for _, op := range ops {
		if err := f.state.Apply(op); err != nil {
			if sub != "lvremove" {
				return err
			}
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return refuse(nil, "%s", strings.Join(errs, "\n  "))
	}
	return nil
}

// ops translates a command line into the model's ops.
func (f *LVM) ops(sub string, a args) ([]lvm.Op, error) {
	switch sub {
	case "lvcreate":
		op, err := lvcreate(a)
		return []lvm.Op{op}, err
	case "lvremove":
		return f.lvremove(a)
	case "lvextend":
		return lvextend(a)
	case "lvrename":
		if len(a.pos) != 3 {
			return nil, invalid("Old and new logical volume names required")
		}
		return []lvm.Op{lvm.RenameLVOp{VG: a.pos[0], From: a.pos[1], To: a.pos[2]}}, nil
	case "lvchange":
		return lvchange(a)
	case "vgmknodes":
		vg, lv, err := a.one()
		if _, ok := f.state.LV(vg, lv); err == nil && !ok {
			err = refuse(lvm.ErrNotFound, "Failed to find logical volume \"%s/%s\"", vg, lv)
		}
		return nil, err
	}
	return f.pvvg(sub, a)
}

func lvcreate(a args) (lvm.Op, error) {
	if len(a.pos) != 1 {
		return nil, invalid("Please specify a volume group or origin")
	}
	vg, origin, _ := strings.Cut(a.pos[0], "/")
	name, tags := a.get("-n"), a.opts["--addtag"]
	size, err := a.bytes("-L")
	if err != nil {
		return nil, err
	}
	switch {
	case a.has("-s"):
		return lvm.CreateSnapshotOp{VG: vg, SnapshotOptions: lvm.SnapshotOptions{Name: name, Origin: origin,
			Size: size, ReadOnly: a.get("-p") == "r", Activate: a.get("--setactivationskip") == "n", Tags: tags}}, nil
	case a.get("--type") == "thin-pool":
		chunk, err1 := a.bytes("-c")
		meta, err2 := a.bytes("--poolmetadatasize")
		return lvm.CreateThinPoolOp{VG: vg, ThinPoolOptions: lvm.ThinPoolOptions{Name: name, Size: size,
			Extents: lvm.Extents(a.get("-l")), ChunkSize: chunk, MetadataSize: meta, Zero: a.get("-Z") == "y",
			Tags: tags}}, firstErr(err1, err2)
	case a.get("--type") == "thin" || a.has("--thinpool"):
		virtual, err := a.bytes("-V")
		return lvm.CreateThinLVOp{VG: vg, ThinLVOptions: lvm.ThinLVOptions{Name: name, Pool: a.get("--thinpool"),
			VirtualSize: virtual, Tags: tags}}, err
	}
	if name == "" || size == 0 {
		return nil, invalid("Please specify a logical volume name and size")
	}
	return lvm.CreateLVOp{VG: vg, LVOptions: lvm.LVOptions{Name: name, Size: size, Tags: tags,
		RAID: lvm.RAIDType(a.get("--type")), Mirrors: a.int("-m"), Stripes: a.int("-i")}}, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// lvremove removes LVs; without -y lvm2 asks before it removes an active LV or a pool with thin
// LVs, and the question reads end of input.
func (f *LVM) lvremove(a args) ([]lvm.Op, error) {
	if len(a.pos) == 0 {
		return nil, invalid("Please enter one or more logical volume paths.")
	}
	var ops []lvm.Op
	for _, p := range a.pos {
		vg, name, _ := strings.Cut(p, "/")
		lv, ok := f.state.LV(vg, name)
		if ok && !a.has("-y") && (lv.Attr.Active() || f.hasThinLVs(vg, name)) {
			return nil, refuse(nil, "Logical volume \"%s\" not removed.", name)
		}
		ops = append(ops, lvm.RemoveLVOp{VG: vg, Name: name})
	}
	return ops, nil
}

func (f *LVM) hasThinLVs(vg, pool string) bool {
	return slices.ContainsFunc(f.state.LVs, func(lv lvm.LV) bool { return lv.VGName == vg && lv.PoolLV == pool })
}

func lvextend(a args) ([]lvm.Op, error) {
	vg, name, err := a.one()
	if err != nil {
		return nil, err
	}
	size, err1 := a.bytes("-L")
	meta, err2 := a.bytes("--poolmetadatasize")
	return []lvm.Op{lvm.ExtendLVOp{VG: vg, Name: name, ExtendOptions: lvm.ExtendOptions{Size: size,
		Extents: lvm.Extents(a.get("-l")), PoolMetadataSize: meta}}}, firstErr(err1, err2)
}

func lvchange(a args) ([]lvm.Op, error) {
	vg, name, err := a.one()
	switch {
	case err != nil:
		return nil, err
	case a.has("--addtag"):
		return []lvm.Op{lvm.AddLVTagsOp{VG: vg, Name: name, Tags: a.opts["--addtag"]}}, nil
	case a.has("--readahead"):
		return []lvm.Op{lvm.SetReadAheadOp{VG: vg, Name: name, ReadAhead: lvm.ReadAhead(a.get("--readahead"))}}, nil
	case a.has("--zero"):
		return []lvm.Op{lvm.SetThinPoolZeroOp{VG: vg, Name: name, Zero: a.get("--zero") == "y"}}, nil
	case a.has("--refresh"):
		return nil, nil // reloads the tables: nothing the report shows changes here
	case a.has("-ay"), a.has("-an"):
		return []lvm.Op{lvm.ActivateLVOp{VG: vg, Name: name, Active: a.has("-ay")}}, nil
	}
	return nil, invalid("lvmtest: unsupported lvchange")
}
