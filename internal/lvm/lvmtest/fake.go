// Package lvmtest is the one in-memory lvm2 of the unit tests: an exec.Executor that runs the lvm2
// commands the lvm Client builds (and blkdiscard, blockdev and dd on LV devices) against an
// lvm.State, changed by the same state model (lvm.State.Apply) that lvmd's cache uses. It reports
// with `lvm fullreport`'s JSON, refuses with lvm2's exit codes and messages, so internal/lvm
// classifies its failures like real ones, and records every command, so tests can count them.
package lvmtest

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// LVM is the fake. Use New; it is safe for concurrent use.
type LVM struct {
	mu      sync.Mutex
	state   *lvm.State
	devices map[string]uint64 // block devices pvcreate may use, with their sizes
	calls   []string
	fail    map[string][]failure
	every   map[string]failure // FailEvery: failures that stay until cleared
	zeroed  []string           // devices blkdiscard --zeroout ran on
}

type failure struct {
	exitCode int
	stderr   string
}

// New returns a fake without VGs or devices.
func New() *LVM {
	return &LVM{state: &lvm.State{}, devices: map[string]uint64{}, fail: map[string][]failure{},
		every: map[string]failure{}}
}

// Apply changes the fake's state with op as a command would, without recording a command. It
// panics when the model refuses op: a test's setup is wrong.
func (f *LVM) Apply(ops ...lvm.Op) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, op := range ops {
		if err := f.state.Apply(op); err != nil {
			panic(fmt.Sprintf("lvmtest: %T %+v: %v", op, op, err))
		}
	}
}

// AddDevice adds a block device of size bytes that pvcreate, vgcreate and vgextend may use.
func (f *LVM) AddDevice(path string, size uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.devices[path] = size
}

// AddVG adds VG name of size bytes (whole extents of extentSize) on one PV, with tags. The PV's
// device is 1 MiB larger, the space lvm2 keeps before the first extent.
func (f *LVM) AddVG(name string, size, extentSize uint64, tags ...string) {
	dev := "/dev/lvmtest/" + name
	f.AddDevice(dev, size+pvOverhead)
	f.Apply(lvm.CreatePVOp{Device: dev, Size: size + pvOverhead},
		lvm.CreateVGOp{Name: name, Devices: []string{dev}, Tags: tags, ExtentSize: extentSize})
}

// AddPV adds a PV of size bytes (its device 1 MiB larger) to VG vg.
func (f *LVM) AddPV(vg, dev string, size uint64) {
	f.AddDevice(dev, size+pvOverhead)
	f.Apply(lvm.CreatePVOp{Device: dev, Size: size + pvOverhead}, lvm.ExtendVGOp{VG: vg, Devices: []string{dev}})
}

// pvOverhead is the space before a PV's first extent.
const pvOverhead = 1 << 20

// AddThinPool adds a zeroing thin pool of size bytes to VG vg; its metadata and the VG's pool
// metadata spare take extents of the VG besides.
func (f *LVM) AddThinPool(vg, name string, size uint64) {
	f.Apply(lvm.CreateThinPoolOp{VG: vg, ThinPoolOptions: lvm.ThinPoolOptions{Name: name, Size: size, Zero: true}})
}

// AddLV adds a linear LV with tags (e.g. a foreign LV without the lvms tag).
func (f *LVM) AddLV(vg, name string, size uint64, tags ...string) {
	f.Apply(lvm.CreateLVOp{VG: vg, LVOptions: lvm.LVOptions{Name: name, Size: size, Tags: tags}})
}

// SetOpen marks LV vg/name open (a mounted filesystem: lvremove refuses it) or not.
func (f *LVM) SetOpen(vg, name string, open bool) {
	f.update(vg, name, func(lv *lvm.LV) {
		lv.Attr.Open = '-'
		if open {
			lv.Attr.Open = 'o'
		}
	})
}

// SetUsage sets the data and metadata fill levels (percent) lvm2 reports for LV vg/name.
func (f *LVM) SetUsage(vg, name string, data, metadata float64) {
	f.update(vg, name, func(lv *lvm.LV) { lv.DataPercent, lv.MetadataPercent = data, metadata })
}

// SetHealth sets the lv_health_status lvm2 reports for LV vg/name ("partial", "refresh needed", ...).
func (f *LVM) SetHealth(vg, name, health string) {
	f.update(vg, name, func(lv *lvm.LV) { lv.HealthStatus = health })
}

func (f *LVM) update(vg, name string, change func(*lvm.LV)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.state.LVs, func(lv lvm.LV) bool { return lv.VGName == vg && lv.Name == name })
	if i < 0 {
		panic("lvmtest: no LV " + vg + "/" + name)
	}
	change(&f.state.LVs[i])
}

// State returns a copy of the fake's state, hidden sub-LVs included.
func (f *LVM) State() *lvm.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state.Clone()
}

// FailNext makes the next execution of `lvm <sub>` fail with exitCode and stderr, without
// changing anything.
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
	if exitCode == 0 {
		delete(f.every, sub)
		return
	}
	f.every[sub] = failure{exitCode, stderr}
}

// Count returns how many times `lvm <sub>` ran; sub "" counts every command run (blkdiscard and
// blockdev too).
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
// every change carries, lvm.CommandArgs); RawCalls has them as run.
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
	vg, _ := f.state.VG(name)
	return vg.Free
}

// Zeroed returns the devices blkdiscard --zeroout was run on, in order.
func (f *LVM) Zeroed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.zeroed)
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
		return &exec.Error{Cmd: c.Name, Args: c.Args, ExitCode: code, Stderr: stderr,
			Err: fmt.Errorf("exit status %d", code)}
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
	case "dd":
		return f.dd(c.Args)
	}
	if c.Name != lvm.Command || len(c.Args) == 0 {
		return "", 127, c.Name + ": command not found in lvmtest"
	}
	sub := c.Args[0]
	if q := f.fail[sub]; len(q) > 0 {
		f.fail[sub] = q[1:]
		return "", q[0].exitCode, q[0].stderr
	}
	if e, ok := f.every[sub]; ok {
		return "", e.exitCode, e.stderr
	}
	a, err := parseArgs(c.Args[1:])
	if err != nil {
		return "", 3, "  " + err.Error() + "\n"
	}
	out, err := f.command(sub, a)
	if err != nil {
		return "", lvm.ExitCode(err), "  " + err.Error() + "\n"
	}
	return out, 0, ""
}
