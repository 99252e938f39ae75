// Package fakelvm is an in-memory lvm2 for unit tests: an exec.Executor that
// holds VGs, thin pools and LVs and understands the handful of `lvm`
// subcommands lvmd runs (fullreport, lvcreate, lvextend, lvremove), with
// lvm2's extent rounding and lvm2's error messages, so internal/lvm
// classifies its failures like real ones. Every execution is recorded, so
// tests can count real commands.
package fakelvm

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// LVM is the fake. Use New; it is safe for concurrent use.
type LVM struct {
	mu    sync.Mutex
	vgs   []*vg
	calls []string
	fail  map[string][]failure
	every map[string]failure // FailEvery: failures that stay until cleared
	seq   int
	// zeroed lists the devices blkdiscard --zeroout ran on.
	zeroed []string
}

type failure struct {
	exitCode int
	stderr   string
}

type vg struct {
	name    string
	extent  uint64
	extents uint64
	tags    []string
	lvs     []*lv
}

type lv struct {
	name     string
	attr     []byte
	size     uint64 // bytes (virtual size for thin LVs)
	physical uint64 // extents taken from the VG
	pool     string
	origin   string
	tags     []string
	uuid     string
}

// New returns an empty fake.
func New() *LVM {
	return &LVM{fail: map[string][]failure{}}
}

// AddVG adds a VG of size bytes (whole extents of extentSize).
func (f *LVM) AddVG(name string, size, extentSize uint64, tags ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.vgs = append(f.vgs, &vg{name: name, extent: extentSize, extents: size / extentSize, tags: tags})
}

// AddThinPool adds a thin pool of size bytes to VG vgName; it takes its size
// plus two metadata extents (metadata and spare) from the VG.
func (f *LVM) AddThinPool(vgName, name string, size uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.vg(vgName)
	ext := ceil(size, v.extent)
	v.lvs = append(
		v.lvs,
		&lv{name: name, attr: []byte("twi-aotz--"), size: ext * v.extent, physical: ext + 2, uuid: f.uuid()},
	)
}

// AddLV adds a linear LV with tags (e.g. a foreign LV without the lvms tag).
func (f *LVM) AddLV(vgName, name string, size uint64, tags ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.vg(vgName)
	ext := ceil(size, v.extent)
	v.lvs = append(
		v.lvs,
		&lv{name: name, attr: []byte("-wi-a-----"), size: ext * v.extent, physical: ext, tags: tags, uuid: f.uuid()},
	)
}

// SetOpen marks LV vgName/name open (a mounted filesystem: lvremove refuses it) or not.
func (f *LVM) SetOpen(vgName, name string, open bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.vg(vgName).lv(name)
	if l == nil {
		panic("fakelvm: no LV " + vgName + "/" + name)
	}
	l.attr[5] = '-'
	if open {
		l.attr[5] = 'o'
	}
}

// FailNext makes the next execution of `lvm <sub>` fail with exitCode and
// stderr, without changing anything.
func (f *LVM) FailNext(sub string, exitCode int, stderr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[sub] = append(f.fail[sub], failure{exitCode, stderr})
}

// FailEvery makes every execution of `lvm <sub>` fail with exitCode and stderr, as a retried
// command would keep failing on a real node; exitCode 0 clears it.
func (f *LVM) FailEvery(sub string, exitCode int, stderr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.every == nil {
		f.every = map[string]failure{}
	}
	if exitCode == 0 {
		delete(f.every, sub)
		return
	}
	f.every[sub] = failure{exitCode, stderr}
}

// Count returns how many times `lvm <sub>` ran; sub "" counts every lvm
// execution.
func (f *LVM) Count(sub string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if sub == "" || strings.HasPrefix(c, "lvm "+sub+" ") || c == "lvm "+sub {
			n++
		}
	}
	return n
}

// Calls returns the command lines run so far, without lvm2's --config option (the archive bound
// every command carries, lvm.CommandArgs); RawCalls has them as run.
func (f *LVM) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.calls))
	for i, c := range f.calls {
		out[i] = configOpt.ReplaceAllString(c, "")
	}
	return out
}

// RawCalls returns the command lines run so far, exactly as run.
func (f *LVM) RawCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// configOpt matches a quoted --config option in a command line (exec.Cmd.String quotes it).
var configOpt = regexp.MustCompile(` --config "[^"]*"`)

// Reset forgets the recorded calls.
func (f *LVM) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// Free returns the free bytes of VG name.
func (f *LVM) Free(name string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.vg(name)
	return v.freeExtents() * v.extent
}

// Exec implements exec.Executor.
func (f *LVM) Exec(ctx context.Context, c exec.Cmd) error {
	if err := ctx.Err(); err != nil {
		return &exec.Error{Cmd: c.Name, Args: c.Args, ExitCode: -1, Err: err}
	}
	f.mu.Lock()
	out, code, stderr := f.run(c)
	f.mu.Unlock()
	if c.Stdout != nil {
		if err := c.Stdout(strings.NewReader(out)); err != nil && code == 0 {
			return fmt.Errorf("%s: read output: %w", c.String(), err)
		}
	}
	if code != 0 {
		return &exec.Error{
			Cmd:      c.Name,
			Args:     c.Args,
			ExitCode: code,
			Stderr:   stderr,
			Err:      fmt.Errorf("exit status %d", code),
		}
	}
	return nil
}

// run executes one command with f.mu held.
func (f *LVM) run(c exec.Cmd) (string, int, string) {
	f.calls = append(f.calls, c.String())
	switch c.Name {
	case "blkdiscard":
		return f.blkdiscard(c.Args)
	case "blockdev":
		return f.blockdev(c.Args)
	}
	if c.Name != "lvm" || len(c.Args) == 0 {
		return "", 127, c.Name + ": command not found in fakelvm"
	}
	sub := c.Args[0]
	if q := f.fail[sub]; len(q) > 0 {
		f.fail[sub] = q[1:]
		return "", q[0].exitCode, q[0].stderr
	}
	if e, ok := f.every[sub]; ok {
		return "", e.exitCode, e.stderr
	}
	args, err := parseArgs(c.Args[1:])
	if err != nil {
		return "", 3, err.Error()
	}
	var out string
	switch sub {
	case "fullreport":
		out, err = f.report(args.pos)
	case "lvcreate":
		err = f.lvcreate(args)
	case "lvremove":
		err = f.lvremove(args)
	case "lvextend":
		err = f.lvextend(args)
	case "lvrename":
		err = f.lvrename(args)
	default:
		return "", 3, "fakelvm: unsupported subcommand " + sub
	}
	var e *lvmErr
	if errors.As(err, &e) {
		return "", e.code, e.msg
	}
	return out, 0, ""
}

type lvmErr struct {
	code int
	msg  string
}

func (e *lvmErr) Error() string { return e.msg }

func failf(code int, format string, a ...any) error {
	return &lvmErr{code: code, msg: fmt.Sprintf("  "+format+"\n", a...)}
}

func (f *LVM) vg(name string) *vg {
	for _, v := range f.vgs {
		if v.name == name {
			return v
		}
	}
	panic("fakelvm: no VG " + name)
}

func (f *LVM) findVG(name string) (*vg, error) {
	for _, v := range f.vgs {
		if v.name == name {
			return v, nil
		}
	}
	return nil, failf(5, "Volume group \"%s\" not found", name)
}

func (v *vg) lv(name string) *lv {
	for _, l := range v.lvs {
		if l.name == name {
			return l
		}
	}
	return nil
}

func (v *vg) freeExtents() uint64 {
	used := uint64(0)
	for _, l := range v.lvs {
		used += l.physical
	}
	return v.extents - min(used, v.extents)
}

func (f *LVM) uuid() string {
	f.seq++
	return "fake-uuid-" + strconv.Itoa(f.seq)
}

func ceil(n, unit uint64) uint64 { return (n + unit - 1) / unit }

// args are parsed lvm arguments: options with their values, flags, and
// positional arguments.
type args struct {
	opts map[string][]string
	pos  []string
}

var valueOpts = []string{
	"-n", "-L", "-V", "-l", "-i", "-I", "-m", "-p", "-Z", "-W", "--type", "--thinpool", "--addtag",
	"--setactivationskip", "--wipesignatures", "--alloc", "--reportformat", "--units", "--configreport", "-o",
	"--config",
}

func parseArgs(list []string) (args, error) {
	a := args{opts: map[string][]string{}}
	for i := 0; i < len(list); i++ {
		arg := list[i]
		switch {
		case slices.Contains(valueOpts, arg):
			if i+1 >= len(list) {
				return a, fmt.Errorf("  Option %s requires an argument", arg)
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

// parseBytes parses "<n>b" (what lvmd passes); other units are unsupported.
func parseBytes(s string) (uint64, error) {
	n, err := strconv.ParseUint(strings.TrimSuffix(s, "b"), 10, 64)
	if err != nil || !strings.HasSuffix(s, "b") {
		return 0, failf(3, "Invalid argument for --size: %s (fakelvm understands <n>b only)", s)
	}
	return n, nil
}

// report renders `lvm fullreport --reportformat json` (all values strings).
func (f *LVM) report(only []string) (string, error) {
	var vgRows, lvRows, segRows []string
	for _, v := range f.vgs {
		if len(only) > 0 && !slices.Contains(only, v.name) {
			continue
		}
		vgRows = append(vgRows, row(
			"vg_name", v.name, "vg_uuid", "vg-"+v.name, "vg_attr", "wz--n-",
			"vg_size", u(v.extents*v.extent), "vg_free", u(v.freeExtents()*v.extent),
			"vg_extent_size", u(v.extent), "vg_extent_count", u(v.extents),
			"vg_free_count", u(v.freeExtents()), "vg_tags", strings.Join(v.tags, ","),
			"pv_count", "1", "lv_count", strconv.Itoa(len(v.lvs))))
		for _, l := range v.lvs {
			lvRows = append(lvRows, row(
				"lv_name", l.name, "vg_name", v.name, "lv_uuid", l.uuid, "lv_attr", string(l.attr),
				"lv_size", u(l.size), "pool_lv", l.pool, "origin", l.origin, "data_percent", "",
				"metadata_percent", "", "lv_metadata_size", "", "lv_tags", strings.Join(l.tags, ","),
				"lv_path", "/dev/"+v.name+"/"+l.name, "lv_dm_path", "/dev/mapper/"+v.name+"-"+l.name))
			segRows = append(segRows, row("lv_uuid", l.uuid, "segtype", segType(l), "stripes", "1",
				"stripe_size", "0", "chunk_size", "0", "seg_size", u(l.size), "devices", ""))
		}
	}
	return fmt.Sprintf(`{"report":[{"vg":[%s],"pv":[],"lv":[%s],"seg":[%s]}]}`,
		strings.Join(vgRows, ","), strings.Join(lvRows, ","), strings.Join(segRows, ",")), nil
}

func segType(l *lv) string {
	switch l.attr[0] {
	case 't':
		return "thin-pool"
	case 'V':
		return "thin"
	case 's':
		return "snapshot"
	}
	return "linear"
}

func u(n uint64) string { return strconv.FormatUint(n, 10) }

func row(kv ...string) string {
	parts := make([]string, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, strconv.Quote(kv[i])+":"+strconv.Quote(kv[i+1]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}
