package devices

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// LoopFilter supplies the devices filter every lvm2 command of the product runs with: it rejects
// the loop devices the kubelet has attached to Block volumes at that moment. Its Config is the lvm
// client's configuration (lvm.Client.WithConfig), which puts it in the command's one --config.
// Make it with NewLoopFilter.
//
// lvm2 reads every block device its filter lets through, and a loop device over one of our LVs is
// not an LV to it (devices/scan_lvs does not apply). Without the filter a pod's own LVM metadata
// inside its Block volume is a PV and a VG of the node to every lvm2 command of the product, and a
// VG named like one of ours stands beside it.
//
// The filter is devices/global_filter given with --config, which replaces the host's own, so it
// is the host's global_filter (read with `lvmconfig --type current`, again whenever lvm.conf or
// lvmlocal.conf changes) with a reject rule in front for every name of each kubelet loop device:
// /dev/loopN and the links to it under /dev/disk (lvm2 accepts a device when any of its names is
// accepted). A loop device attached after the filter was made is still read by that one command.
type LoopFilter struct {
	e       exec.Executor
	fsys    fs.FS
	confDir string

	mu        sync.Mutex
	confStamp string // lvm.conf and lvmlocal.conf as stat saw them when hostRules was read
	hostRules string // the host's global_filter entries as lvmconfig printed them ("" when unset)
}

// NewLoopFilter returns the filter of the kubelet's loop devices. e runs lvmconfig (to read the
// host's own filter); fsys is the host's root as the process sees it (sys/class/block and dev/disk
// are read in it); lvmConfDir is the host's /etc/lvm inside fsys ("etc/lvm" on the host,
// "proc/1/root/etc/lvm" in a pod with the host's PID namespace).
func NewLoopFilter(e exec.Executor, fsys fs.FS, lvmConfDir string) *LoopFilter {
	return &LoopFilter{e: e, fsys: fsys, confDir: lvmConfDir}
}

// Config is the devices section of the next lvm2 command (an lvm.ConfigFunc): the kubelet's loop
// devices rejected in front of the host's own rules, or "" while the kubelet has none.
func (f *LoopFilter) Config(ctx context.Context) (string, error) {
	names := kubeletLoopNames(f.fsys)
	if len(names) == 0 {
		return "", nil
	}
	host, err := f.hostFilter(ctx)
	if err != nil {
		return "", err
	}
	return globalFilter(names, host), nil
}

// hostFilter returns the host's own global_filter entries, read again when the lvm.conf files
// changed since the last read.
func (f *LoopFilter) hostFilter(ctx context.Context) (string, error) {
	stamp := f.stamp()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.confStamp != "" && f.confStamp == stamp {
		return f.hostRules, nil
	}
	out, err := exec.Run(ctx, f.e, lvm.Command, "lvmconfig", "--type", "current", "devices/global_filter")
	rules := ""
	switch {
	case exec.HasExitCode(err, 5) && exec.StderrContains(err, "not found"):
		// No global_filter in the host's configuration: ours alone.
	case err != nil:
		return "", fmt.Errorf("read the host's devices/global_filter: %w", err)
	default:
		if rules, err = ParseGlobalFilter(string(out)); err != nil {
			return "", err
		}
	}
	f.confStamp, f.hostRules = stamp, rules
	return rules, nil
}

// stamp describes the host's lvm.conf and lvmlocal.conf by modification time and size ("-" for a
// file stat cannot see), so that an edit is noticed without running lvmconfig per command.
func (f *LoopFilter) stamp() string {
	var b strings.Builder
	for _, name := range []string{"lvm.conf", "lvmlocal.conf"} {
		fi, err := fs.Stat(f.fsys, path.Join(f.confDir, name))
		if err != nil {
			b.WriteString("-;")
			continue
		}
		fmt.Fprintf(&b, "%d/%d;", fi.ModTime().UnixNano(), fi.Size())
	}
	return b.String()
}

// ParseGlobalFilter returns the entries of `lvmconfig devices/global_filter` output
// (global_filter=["a|x|","r|.*|"] or global_filter="a|.*|") as they appear between the brackets,
// ready to be put in a list again.
func ParseGlobalFilter(out string) (string, error) {
	v, ok := strings.CutPrefix(strings.TrimSpace(out), "global_filter=")
	if !ok {
		return "", fmt.Errorf("lvmconfig printed %q, want global_filter=<value>", out)
	}
	if inner, ok := strings.CutPrefix(v, "["); ok {
		if inner, ok = strings.CutSuffix(inner, "]"); ok {
			return strings.TrimSpace(inner), nil
		}
	} else if len(v) >= 2 && strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`) {
		return v, nil
	}
	return "", errors.New("lvmconfig printed global_filter=" + v + ", want a string or a list of strings")
}

// kubeletLoopNames lists every name lvm2 knows the kubelet's loop devices by: /dev/loopN and the
// links to it under /dev/disk (by-loop-ref, by-id/lvm-pv-uuid-…, by-uuid, …), sorted.
func kubeletLoopNames(fsys fs.FS) []string {
	files, _ := fs.Glob(fsys, "sys/class/block/loop*/loop/backing_file")
	loops := map[string]bool{}
	for _, file := range files {
		backing, err := readTrimmed(fsys, file)
		if err != nil {
			continue // detached meanwhile
		}
		if kubeletLoop(BlockDevice{Type: "loop"}, Facts{LoopBackingFile: backing}) {
			loops[path.Base(path.Dir(path.Dir(file)))] = true
		}
	}
	if len(loops) == 0 {
		return nil
	}
	var names []string
	for l := range loops {
		names = append(names, "/dev/"+l)
	}
	links, _ := fs.Glob(fsys, "dev/disk/*/*")
	for _, link := range links {
		target, err := fs.ReadLink(fsys, link)
		if err == nil && loops[path.Base(target)] {
			names = append(names, "/"+link)
		}
	}
	slices.Sort(names)
	return names
}

// globalFilter is the devices section rejecting exactly the given names, then applying the host's
// own rules.
func globalFilter(names []string, hostRules string) string {
	rules := make([]string, 0, len(names)+1)
	for _, n := range names {
		rules = append(rules, `"r|^`+literalPattern(n)+`$|"`)
	}
	if hostRules != "" {
		rules = append(rules, hostRules)
	}
	return "devices { global_filter = [ " + strings.Join(rules, ", ") + " ] }"
}

// literalPattern is name as an lvm2 regex: characters other than letters, digits and / _ : - are
// matched by "." (udev escapes link names as \xNN; a "." never ends the pattern or the config
// string, and at worst also rejects a name that differs only there).
func literalPattern(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("/_:-", r):
			return r
		}
		return '.'
	}, name)
}
