package devices

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// Host inspects and wipes the block devices of one host. Commands run
// through an exec.Executor; sysfs and mountinfo are read through an fs.FS
// rooted at "/" (os.DirFS("/") in production, fstest.MapFS in tests).
type Host struct {
	exec exec.Executor
	fsys fs.FS
	// mountInfo is the mountinfo path inside fsys.
	mountInfo string
	// resolve maps a device path to its device node (ResolvePath).
	resolve func(string) (string, error)
	// openExcl opens a device node with O_EXCL (openExclusive).
	openExcl func(string) (io.Closer, error)
}

// Option configures a Host.
type Option func(*Host)

// WithMountInfo sets the mountinfo file (relative to the fs.FS root) used
// to find mounts. The default "proc/self/mountinfo" is right when the
// process shares the host's mount namespace; a pod running commands through
// nsenter should use "proc/1/mountinfo" (with hostPID).
func WithMountInfo(p string) Option {
	return func(h *Host) { h.mountInfo = p }
}

// NewHost returns a Host. fsys must be rooted at the host's "/".
func NewHost(e exec.Executor, fsys fs.FS, opts ...Option) *Host {
	h := &Host{
		exec: e, fsys: fsys, mountInfo: "proc/self/mountinfo", resolve: ResolvePath, openExcl: openExclusive,
	}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Facts are what was probed directly about a device, bypassing udev.
type Facts struct {
	// Signatures are the signature types found on the device: filesystems,
	// "LVM2_member", swap, RAID members, ... ("ambivalent" when blkid found
	// several conflicting ones).
	Signatures []string
	// PartTable is the partition table type ("gpt", "dos") if any.
	PartTable string
	// PartLabel is the partition's GPT name, for partitions.
	PartLabel string
	// Partitions are the device's partitions per sysfs (/dev/<name>).
	Partitions []string
	// Holders are the devices stacked on it per sysfs, e.g. /dev/dm-0.
	Holders []string
	// MountPoints are where the device is mounted.
	MountPoints []string
	// LoopBackingFile is the backing file of a loop device.
	LoopBackingFile string
	// LoopOverDevice is set for a loop device whose backing file is a block device.
	LoopOverDevice bool
	// LoopsOver are the loop devices set up over this device (/dev/loopN), which therefore holds
	// their data; see Usage.
	LoopsOver []string
	// Suspended is set for a suspended device-mapper device.
	Suspended bool
	// Gone is set when the device left sysfs after it was listed (an LV removed meanwhile), and
	// Detached for a loop device with no backing file (the kubelet let go of a Block volume's loop):
	// neither has anything to read.
	Gone, Detached bool
	// Swap is set when the device is an active swap area.
	Swap bool
	// OpenBy are the processes holding the device open ("pid 42 (cat)").
	OpenBy []string
	// NotExclusive is why an exclusive open (O_EXCL) of the device failed; empty when it succeeded.
	NotExclusive string
}

// Inspect probes one device: partitions and holders (sysfs), mounts in any mount namespace including
// bind mounts of its device node, swap and open descriptors (from u, see ReadUsage), loop backing
// file and dm suspension (sysfs), then signatures (blkid -p, and wipefs when blkid finds nothing) and
// whether it can be opened exclusively right now. An LVM logical volume and a loop device of the
// kubelet's, and the dm-crypt mapping of a logical volume, get no signature probe and no exclusive
// open (see volumeDevice).
func (h *Host) Inspect(ctx context.Context, d BlockDevice, u Usage) (Facts, error) {
	var f Facts
	name := path.Base(d.KName)
	sys := "sys/class/block/" + name
	devno, err := h.readTrimmed(sys + "/dev")
	if errors.Is(err, fs.ErrNotExist) {
		f.Gone = true
		return f, nil
	}
	if f.Holders, err = h.holders(name); err != nil {
		return Facts{}, err
	}
	f.Partitions = h.partitions(name)
	f.MountPoints = u.Mounts.of(devno, name, d.Name, d.KName)
	f.Swap = u.swap(name)
	f.OpenBy = u.openBy[devno]
	f.LoopsOver = u.loopsOver[devno]
	if s, err := h.readTrimmed(sys + "/loop/backing_file"); err == nil {
		f.LoopBackingFile = s
		_, f.LoopOverDevice = h.backingDevno(s)
	} else if d.Type == "loop" && errors.Is(err, fs.ErrNotExist) {
		f.Detached = true // sysfs has loop/ only while a file is attached
	}
	if s, err := h.readTrimmed(sys + "/dm/suspended"); err == nil && s == "1" {
		f.Suspended = true
	}
	if volumeDevice(d, f) || f.Detached {
		return f, nil
	}
	if err := h.probeSignatures(ctx, d.KName, &f); err != nil {
		return Facts{}, err
	}
	if c, err := h.openExcl(d.KName); err != nil {
		f.NotExclusive = err.Error()
	} else {
		_ = c.Close()
	}
	return f, nil
}

// volumeDevice reports whether d is a device of a volume rather than a disk: an LVM logical volume (a
// thin pool, its parts, a volume), the dm-crypt mapping of an encrypted one, or a loop device the
// kubelet attached to a Block volume. The filter rejects them whatever their content (rejectType,
// rejectKubeletLoop), so Inspect does not read them: a node holds one of each per volume, blkid and
// wipefs on each cost a second or more on every discovery, and an open of a volume's device can make
// an lvremove or a cryptsetup close of it fail as in use.
func volumeDevice(d BlockDevice, f Facts) bool {
	return d.Type == "lvm" || encryptedLV(d) || kubeletLoop(d, f)
}

// blkid's exit statuses with -p: nothing found (or the device could not be read), and conflicting
// signatures.
const (
	blkidNothingFound = 2
	blkidAmbivalent   = 8
)

func (h *Host) probeSignatures(ctx context.Context, dev string, f *Facts) error {
	sig, err := ProbeSignatures(ctx, h.exec, dev)
	if err != nil {
		return err
	}
	f.Signatures, f.PartTable, f.PartLabel = sig.Types, sig.PartTable, sig.PartLabel
	return nil
}

// Ambivalent is the signature type reported when blkid finds several
// conflicting signatures.
const Ambivalent = "ambivalent"

// Signature is what a direct probe found on a device.
type Signature struct {
	// Types are the signature types: filesystems, "LVM2_member", swap, RAID
	// members, ... (Ambivalent when blkid found conflicting ones).
	Types []string
	// PartTable is the partition table type ("gpt", "dos") if any.
	PartTable string
	// PartLabel is the partition's GPT name, for partitions.
	PartLabel string
	// UUID is the filesystem UUID blkid reports (a btrfs filesystem's fsid), "" when none.
	UUID string
}

// ProbeSignatures probes dev directly (`blkid -p`, bypassing udev's cache).
// blkid exits 2 both for "nothing found" and "cannot read the device", so
// that answer is checked with `wipefs --no-act`, which fails when it cannot
// open the device and lists every signature it knows: an unreadable device
// is an error, never blank.
func ProbeSignatures(ctx context.Context, e exec.Executor, dev string) (Signature, error) {
	out, err := exec.Run(ctx, e, "blkid", "-p", "-o", "export", dev)
	switch {
	case exec.HasExitCode(err, blkidAmbivalent):
		return Signature{Types: []string{Ambivalent}}, nil
	case exec.HasExitCode(err, blkidNothingFound):
		sigs, werr := wipefsSignatures(ctx, e, dev)
		if werr != nil {
			return Signature{}, werr
		}
		return Signature{Types: sigs}, nil
	case err != nil:
		return Signature{}, fmt.Errorf("probe signatures of %s: %w", dev, err)
	}
	kv := ParseBlkid(out)
	var sig Signature
	if t := kv["TYPE"]; t != "" {
		sig.Types = append(sig.Types, t)
	}
	sig.PartTable = kv["PTTYPE"]
	sig.PartLabel = kv["PART_ENTRY_NAME"]
	sig.UUID = kv["UUID"]
	return sig, nil
}

func wipefsSignatures(ctx context.Context, e exec.Executor, dev string) ([]string, error) {
	var sigs []string
	err := e.Exec(ctx, exec.Cmd{
		Name: "wipefs", Args: []string{"--no-act", "--json", dev},
		Stdout: func(r io.Reader) (err error) {
			sigs, err = ParseWipefs(r)
			return err
		},
	})
	if err != nil {
		return nil, fmt.Errorf("probe signatures of %s: %w", dev, err)
	}
	return sigs, nil
}

// ParseWipefs decodes `wipefs --no-act --json` output into the distinct signature types it lists.
func ParseWipefs(r io.Reader) ([]string, error) {
	var out struct {
		Signatures []struct {
			Type string `json:"type"`
		} `json:"signatures"`
	}
	if err := json.NewDecoder(r).Decode(&out); err != nil {
		return nil, fmt.Errorf("decode wipefs output: %w", err)
	}
	var sigs []string
	for _, s := range out.Signatures {
		if s.Type != "" && !slices.Contains(sigs, s.Type) {
			sigs = append(sigs, s.Type)
		}
	}
	return sigs, nil
}

// ParseBlkid parses `blkid -o export` output (KEY=value lines, values
// backslash-escaped).
func ParseBlkid(out []byte) map[string]string {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok || k == "" {
			continue
		}
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			if v[i] == '\\' && i+1 < len(v) {
				i++
			}
			b.WriteByte(v[i])
		}
		kv[k] = b.String()
	}
	return kv
}

// holders lists /sys/class/block/<name>/holders as /dev paths.
func (h *Host) holders(name string) ([]string, error) {
	entries, err := fs.ReadDir(h.fsys, "sys/class/block/"+name+"/holders")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read holders of %s: %w", name, err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, "/dev/"+e.Name())
	}
	return out, nil
}

// partitions lists sysfs partition subdirectories of <name> as /dev paths.
func (h *Host) partitions(name string) []string {
	entries, err := fs.ReadDir(h.fsys, "sys/class/block/"+name)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), name) {
			continue
		}
		if _, err := fs.Stat(h.fsys, "sys/class/block/"+name+"/"+e.Name()+"/partition"); err == nil {
			out = append(out, "/dev/"+e.Name())
		}
	}
	return out
}

func (h *Host) readTrimmed(p string) (string, error) { return readTrimmed(h.fsys, p) }

// readTrimmed reads the sysfs-style file p of fsys without its surrounding white space.
func readTrimmed(fsys fs.FS, p string) (string, error) {
	b, err := fs.ReadFile(fsys, p)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// MountTable indexes mountinfo by device number, by source and by the device node a bind mount of
// devtmpfs exposes.
type MountTable struct {
	byDev    map[string][]string
	bySource map[string][]string
	// byNode maps a devtmpfs path ("/sdb") to where it is bind-mounted (a container's /dev/xvdb, or
	// `mount --bind /dev/sdb /somewhere`).
	byNode map[string][]string
}

// ReadMounts reads the Host's mountinfo.
func (h *Host) ReadMounts() (MountTable, error) {
	b, err := fs.ReadFile(h.fsys, h.mountInfo)
	if err != nil {
		return MountTable{}, fmt.Errorf("read mounts: %w", err)
	}
	return ParseMountInfo(b), nil
}

// ParseMountInfo parses /proc/<pid>/mountinfo (proc(5)).
func ParseMountInfo(b []byte) MountTable {
	t := MountTable{byDev: map[string][]string{}, bySource: map[string][]string{}, byNode: map[string][]string{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 5 {
			continue
		}
		mp := unescapeOctal(fields[4])
		t.byDev[fields[2]] = append(t.byDev[fields[2]], mp)
		if len(fields) > sep+2 {
			src := unescapeOctal(fields[sep+2])
			t.bySource[src] = append(t.bySource[src], mp)
		}
		if root := unescapeOctal(fields[3]); len(fields) > sep+1 && fields[sep+1] == "devtmpfs" && root != "/" {
			t.byNode[root] = append(t.byNode[root], mp)
		}
	}
	return t
}

// merge adds the mounts of other, each mount point suffixed with " (where)".
func (t *MountTable) merge(other MountTable, where string) {
	add := func(dst *map[string][]string, src map[string][]string) {
		if *dst == nil {
			*dst = map[string][]string{}
		}
		for k, mps := range src {
			for _, mp := range mps {
				(*dst)[k] = append((*dst)[k], mp+" ("+where+")")
			}
		}
	}
	add(&t.byDev, other.byDev)
	add(&t.bySource, other.bySource)
	add(&t.byNode, other.byNode)
}

// MountPoints returns where devno ("major:minor") is mounted.
func (t MountTable) MountPoints(devno string) []string { return t.byDev[devno] }

// of returns, sorted and without duplicates, where the device with devno and kernel name is mounted:
// by device number, by any of its paths as mount source, and as a bind mount of its device node.
func (t MountTable) of(devno, name string, paths ...string) []string {
	var out []string
	if devno != "" {
		out = append(out, t.byDev[devno]...)
	}
	for _, p := range slices.Compact(slices.Clone(paths)) {
		out = append(out, t.bySource[p]...)
	}
	out = append(out, t.byNode["/"+name]...)
	slices.Sort(out)
	return slices.Compact(out)
}

// unescapeOctal undoes mountinfo's \NNN escapes (space, tab, newline, \).
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
