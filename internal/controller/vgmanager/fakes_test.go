package vgmanager_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

const (
	gib    = uint64(1) << 30
	extent = uint64(4) << 20
)

// fakeLVM is an in-memory lvm2 holding VGs, PVs and LVs with extent accounting per PV, so "this PV
// holds data" is observable. Like *lvm.Client it refuses to modify a VG without the @lvms tag.
// Every modifying call is recorded in changes.
type fakeLVM struct {
	mu      sync.Mutex
	sizes   map[string]uint64 // device sizes, for pvcreate
	vgs     []*fvg
	pvs     []*fpv
	lvs     []*flv
	changes []string
	reads   int
}

type fvg struct {
	name string
	tags []string
}

type fpv struct {
	name, vg string
	extents  uint64
	used     uint64
}

type flv struct {
	name, vg, seg string
	extents       uint64
	metadata      uint64 // bytes, thin pools
	chunk         uint64
	zero          bool     // thin pools: new chunks are zeroed
	on            []string // PVs holding its extents
	// dataPct and metaPct are a thin pool's fill levels.
	dataPct, metaPct float64
}

func newFakeLVM() *fakeLVM { return &fakeLVM{sizes: map[string]uint64{}} }

// addVG adds a VG on devices (each sizes[dev] bytes) with tags.
func (f *fakeLVM) addVG(name string, devs []string, tags ...string) {
	f.vgs = append(f.vgs, &fvg{name: name, tags: tags})
	for _, d := range devs {
		f.pvs = append(f.pvs, &fpv{name: d, vg: name, extents: f.sizes[d] / extent})
	}
}

// addLV allocates a linear LV (or a thin pool when seg is "thin-pool") of n extents.
func (f *fakeLVM) addLV(vg, name, seg string, n uint64) error {
	on, err := f.alloc(vg, n)
	if err != nil {
		return err
	}
	f.lvs = append(f.lvs, &flv{name: name, vg: vg, seg: seg, extents: n, on: on, metadata: 4 << 20})
	return nil
}

func (f *fakeLVM) alloc(vg string, n uint64) ([]string, error) {
	if f.free(vg) < n {
		return nil, fmt.Errorf(
			"%w: VG %s has %d free extents, %d required",
			lvm.ErrInsufficientSpace,
			vg,
			f.free(vg),
			n,
		)
	}
	var on []string
	for _, pv := range f.pvs {
		if pv.vg != vg || n == 0 || pv.used == pv.extents {
			continue
		}
		take := min(n, pv.extents-pv.used)
		pv.used += take
		n -= take
		on = append(on, pv.name)
	}
	return on, nil
}

func (f *fakeLVM) free(vg string) uint64 {
	n := uint64(0)
	for _, pv := range f.pvs {
		if pv.vg == vg {
			n += pv.extents - pv.used
		}
	}
	return n
}

func (f *fakeLVM) vgByName(name string) *fvg {
	for _, v := range f.vgs {
		if v.name == name {
			return v
		}
	}
	return nil
}

func (f *fakeLVM) record(format string, args ...any) {
	f.changes = append(f.changes, fmt.Sprintf(format, args...))
}

func (f *fakeLVM) Changes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.changes)
}

func (f *fakeLVM) State(_ context.Context, only ...string) (*lvm.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	s := &lvm.State{}
	for _, v := range f.vgs {
		if len(only) > 0 && !slices.Contains(only, v.name) {
			continue
		}
		var size, free uint64
		for _, pv := range f.pvs {
			if pv.vg == v.name {
				size += pv.extents
				free += pv.extents - pv.used
			}
		}
		s.VGs = append(s.VGs, lvm.VG{Name: v.name, Tags: slices.Clone(v.tags), Size: size * extent, Free: free * extent,
			ExtentSize: extent, ExtentCount: size, FreeCount: free})
	}
	for _, pv := range f.pvs {
		if len(only) > 0 && !slices.Contains(only, pv.vg) {
			continue
		}
		s.PVs = append(
			s.PVs,
			lvm.PV{Name: pv.name, VGName: pv.vg, Size: pv.extents * extent, Free: (pv.extents - pv.used) * extent},
		)
	}
	for _, lv := range f.lvs {
		if len(only) > 0 && !slices.Contains(only, lv.vg) {
			continue
		}
		s.LVs = append(s.LVs, lvm.LV{Name: lv.name, VGName: lv.vg, Size: lv.extents * extent, MetadataSize: lv.metadata,
			Segments: []lvm.Segment{{Type: lv.seg, ChunkSize: lv.chunk}}, Attr: lvm.LVAttr{Zero: lv.zero},
			DataPercent: lv.dataPct, MetadataPercent: lv.metaPct})
	}
	return s, nil
}

func (f *fakeLVM) owned(vg lvm.VG) error {
	v := f.vgByName(vg.Name)
	if v == nil {
		return fmt.Errorf("VG %s: %w", vg.Name, lvm.ErrNotFound)
	}
	if !slices.Contains(v.tags, lvm.Tag) {
		return fmt.Errorf("VG %s: %w", vg.Name, lvm.ErrNotOurs)
	}
	return nil
}

func (f *fakeLVM) CreateVG(_ context.Context, name string, devs []string, tags ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("vgcreate %s %s", name, strings.Join(append(devs, tags...), " "))
	if f.vgByName(name) != nil {
		return fmt.Errorf("VG %s: %w", name, lvm.ErrAlreadyExists)
	}
	f.addVG(name, devs, append([]string{lvm.Tag}, tags...)...)
	return nil
}

func (f *fakeLVM) AddVGTags(_ context.Context, vg lvm.VG, tags ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("vgchange --addtag %s %s", strings.Join(tags, " "), vg.Name)
	if err := f.owned(vg); err != nil {
		return err
	}
	v := f.vgByName(vg.Name)
	v.tags = append(v.tags, tags...)
	return nil
}

func (f *fakeLVM) ExtendVG(_ context.Context, vg lvm.VG, devs ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("vgextend %s %s", vg.Name, strings.Join(devs, " "))
	if err := f.owned(vg); err != nil {
		return err
	}
	for _, d := range devs {
		f.pvs = append(f.pvs, &fpv{name: d, vg: vg.Name, extents: f.sizes[d] / extent})
	}
	return nil
}

func (f *fakeLVM) ReduceVG(_ context.Context, vg lvm.VG, devs ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("vgreduce %s %s", vg.Name, strings.Join(devs, " "))
	if err := f.owned(vg); err != nil {
		return err
	}
	for _, pv := range f.pvs {
		if slices.Contains(devs, pv.name) {
			if pv.used > 0 {
				return fmt.Errorf("PV %s is still in use", pv.name)
			}
			pv.vg = ""
		}
	}
	return nil
}

func (f *fakeLVM) RemoveVG(_ context.Context, vg lvm.VG) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("vgremove %s", vg.Name)
	if err := f.owned(vg); err != nil {
		return err
	}
	for _, lv := range f.lvs {
		if lv.vg == vg.Name {
			return fmt.Errorf("VG %s still has LV %s", vg.Name, lv.name)
		}
	}
	f.vgs = slices.DeleteFunc(f.vgs, func(v *fvg) bool { return v.name == vg.Name })
	for _, pv := range f.pvs {
		if pv.vg == vg.Name {
			pv.vg = ""
		}
	}
	return nil
}

func (f *fakeLVM) RemovePV(_ context.Context, pv lvm.PV) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("pvremove %s", pv.Name)
	for _, p := range f.pvs {
		if p.name == pv.Name && p.vg != "" {
			return fmt.Errorf("PV %s: %w", pv.Name, lvm.ErrNotOurs)
		}
	}
	f.pvs = slices.DeleteFunc(f.pvs, func(p *fpv) bool { return p.name == pv.Name })
	return nil
}

func (f *fakeLVM) CreateThinPool(_ context.Context, vg lvm.VG, o lvm.ThinPoolOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(
		"lvcreate thin-pool %s/%s -l %s -c %d --poolmetadatasize %d -Z %t",
		vg.Name,
		o.Name,
		o.Extents,
		o.ChunkSize,
		o.MetadataSize,
		o.Zero,
	)
	if err := f.owned(vg); err != nil {
		return err
	}
	pct, err := strconv.ParseUint(strings.TrimSuffix(string(o.Extents), "%FREE"), 10, 64)
	if err != nil {
		return fmt.Errorf("%w: extents %q", lvm.ErrInvalidArgument, o.Extents)
	}
	// As lvm2 does, the percentage covers data, metadata and the metadata spare.
	meta := uint64(4 << 20)
	if o.MetadataSize > 0 {
		meta = o.MetadataSize
	}
	metaExt := (meta + extent - 1) / extent
	share := pct * f.free(vg.Name) / 100
	if share <= 2*metaExt {
		return fmt.Errorf(
			"%w: VG %s: %d%% of the free extents cannot hold 2 × %d metadata extents",
			lvm.ErrInsufficientSpace,
			vg.Name,
			pct,
			metaExt,
		)
	}
	n := share - 2*metaExt
	if err := f.addLV(vg.Name, o.Name, "thin-pool", n); err != nil {
		return err
	}
	pool := f.lvs[len(f.lvs)-1]
	pool.chunk, pool.metadata, pool.zero = o.ChunkSize, meta, o.Zero
	_, err = f.alloc(vg.Name, 2*metaExt)
	return err
}

func (f *fakeLVM) SetThinPoolZero(_ context.Context, vg lvm.VG, name string, zero bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("lvchange --zero %t %s/%s", zero, vg.Name, name)
	if err := f.owned(vg); err != nil {
		return err
	}
	lv := f.lv(vg.Name, name)
	if lv == nil {
		return fmt.Errorf("LV %s/%s: %w", vg.Name, name, lvm.ErrNotFound)
	}
	lv.zero = zero
	return nil
}

func (f *fakeLVM) lv(vg, name string) *flv {
	for _, lv := range f.lvs {
		if lv.vg == vg && lv.name == name {
			return lv
		}
	}
	return nil
}

func (f *fakeLVM) ExtendLV(_ context.Context, vg lvm.VG, name string, o lvm.ExtendOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("lvextend %s/%s -l %s --poolmetadatasize %d", vg.Name, name, o.Extents, o.PoolMetadataSize)
	if err := f.owned(vg); err != nil {
		return err
	}
	lv := f.lv(vg.Name, name)
	if lv == nil {
		return fmt.Errorf("LV %s: %w", name, lvm.ErrNotFound)
	}
	if o.PoolMetadataSize > lv.metadata {
		if _, err := f.alloc(vg.Name, (o.PoolMetadataSize-lv.metadata)/extent); err != nil {
			return err
		}
		lv.metadata = o.PoolMetadataSize
	}
	if o.Extents != "" {
		n, err := strconv.ParseUint(string(o.Extents), 10, 64)
		if err != nil || n < lv.extents {
			return fmt.Errorf("%w: extents %q", lvm.ErrInvalidArgument, o.Extents)
		}
		on, err := f.alloc(vg.Name, n-lv.extents)
		if err != nil {
			return err
		}
		lv.extents, lv.on = n, append(lv.on, on...)
	}
	return nil
}

func (f *fakeLVM) RemoveThinPool(_ context.Context, vg lvm.VG, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("lvremove %s/%s", vg.Name, name)
	if err := f.owned(vg); err != nil {
		return err
	}
	lv := f.lv(vg.Name, name)
	if lv == nil {
		return fmt.Errorf("LV %s: %w", name, lvm.ErrNotFound)
	}
	f.lvs = slices.DeleteFunc(f.lvs, func(l *flv) bool { return l == lv })
	// Extent accounting per PV is approximate after removals: free everything of the VG the LVs
	// left no longer need.
	for _, pv := range f.pvs {
		if pv.vg == vg.Name {
			pv.used = 0
		}
	}
	for _, l := range f.lvs {
		if l.vg == vg.Name {
			on, _ := f.alloc(vg.Name, l.extents)
			l.on = on
		}
	}
	return nil
}

// fakeDisks is a node's block devices, evaluated by the real device filter. A device lvm2 lists as
// a PV shows an LVM2_member signature, as blkid would.
type fakeDisks struct {
	mu    sync.Mutex
	devs  []devices.Candidate
	wiped []string
}

// disk adds a disk of size bytes with the given signatures (e.g. "ext4").
func (d *fakeDisks) disk(name string, size uint64, sigs ...string) {
	d.devs = append(d.devs, devices.Candidate{
		Device: devices.BlockDevice{Name: name, KName: name, Type: "disk", Size: size},
		Facts:  devices.Facts{Signatures: sigs},
	})
}

func (d *fakeDisks) Plan(_ context.Context, p devices.Policy) ([]devices.Verdict, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []devices.Verdict
	for _, c := range d.devs {
		if _, isPV := p.PVs[c.Device.Name]; isPV && !slices.Contains(c.Facts.Signatures, "LVM2_member") {
			c.Facts.Signatures = append(slices.Clone(c.Facts.Signatures), "LVM2_member")
		}
		out = append(out, devices.Evaluate(c, p))
	}
	return out, nil
}

func (d *fakeDisks) Wipe(_ context.Context, dev string, _ devices.WipeOptIn) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.wiped = append(d.wiped, dev)
	for i := range d.devs {
		if d.devs[i].Device.Name == dev {
			d.devs[i].Facts = devices.Facts{}
		}
	}
	return nil
}

func (d *fakeDisks) Wiped() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.wiped)
}

// node is a fake node: disks and lvm2 sharing device sizes.
type node struct {
	lvm   *fakeLVM
	disks *fakeDisks
}

// newNode returns a node with 2 GiB disks; sigs maps a disk to its signatures.
func newNode(names []string, sigs map[string][]string) *node {
	n := &node{lvm: newFakeLVM(), disks: &fakeDisks{}}
	for _, name := range names {
		n.lvm.sizes[name] = 2 * gib
		n.disks.disk(name, 2*gib, sigs[name]...)
	}
	return n
}

// modifications returns every modifying operation run: lvm2 changes and wipes.
func (n *node) modifications() []string {
	out := n.lvm.Changes()
	for _, w := range n.disks.Wiped() {
		out = append(out, "wipe "+w)
	}
	return out
}

// resolve resolves a path of an existing disk to itself, like devices.ResolvePath.
func (n *node) resolve(p string) (string, error) {
	for _, c := range n.disks.devs {
		if c.Device.Name == p {
			return p, nil
		}
	}
	return "", fmt.Errorf("resolve device path %s: no such file or directory", p)
}
