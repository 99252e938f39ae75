package vgmanager_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvm/lvmtest"
)

const gib = uint64(1) << 30

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

// node is a fake node: its disks, and lvm2 (the real lvm Client on lvmtest's in-memory lvm2) on
// the same devices.
type node struct {
	fake  *lvmtest.LVM
	lvm   *lvm.Client
	disks *fakeDisks
}

// newNode returns a node with 2 GiB disks; sigs maps a disk to its signatures. The lvm Client has
// no identity, as the node agent's: the identity comes with each vgmanager.Input.
func newNode(names []string, sigs map[string][]string) *node {
	fake := lvmtest.New()
	n := &node{fake: fake, lvm: lvm.New(fake), disks: &fakeDisks{}}
	for _, name := range names {
		n.disk(name, 2*gib, sigs[name]...)
	}
	return n
}

// disk adds a disk of size bytes with the given signatures, seen by the inventory and by lvm2.
func (n *node) disk(name string, size uint64, sigs ...string) {
	n.fake.AddDevice(name, size)
	n.disks.disk(name, size, sigs...)
}

// addVG makes VG name on disks devs with tags, as a setup: no command is recorded.
func (n *node) addVG(name string, devs []string, tags ...string) {
	var ops []lvm.Op
	for _, d := range devs {
		i := slices.IndexFunc(n.disks.devs, func(c devices.Candidate) bool { return c.Device.Name == d })
		if i < 0 {
			panic("addVG: no disk " + d)
		}
		ops = append(ops, lvm.CreatePVOp{Device: d, Size: n.disks.devs[i].Device.Size})
	}
	n.fake.Apply(append(ops, lvm.CreateVGOp{Name: name, Devices: devs, Tags: tags})...)
}

// addPool makes thin pool tp in VG vg as the manager makes thinSpec's pool (90% of the free
// extents, 128 KiB chunks), zeroing new chunks or not.
func (n *node) addPool(vg string, zero bool) {
	n.fake.Apply(lvm.CreateThinPoolOp{VG: vg, ThinPoolOptions: lvm.ThinPoolOptions{
		Name: "tp", Extents: lvm.PercentOf(90, "FREE"), ChunkSize: 128 << 10, Zero: zero}})
}

// addThinLV makes a 1 GiB thin LV (a volume) in thin pool tp of VG vg.
func (n *node) addThinLV(vg, name string) {
	n.fake.Apply(lvm.CreateThinLVOp{VG: vg, ThinLVOptions: lvm.ThinLVOptions{Name: name, Pool: "tp",
		VirtualSize: gib}})
}

// lvmChanges returns the lvm2 command lines run since the last Reset, reads (lvm fullreport)
// left out.
func (n *node) lvmChanges() []string {
	return slices.DeleteFunc(n.fake.Calls(), func(c string) bool { return strings.HasPrefix(c, "lvm fullreport ") })
}

// modifications returns every modifying operation run: lvm2 changes and wipes.
func (n *node) modifications() []string {
	out := n.lvmChanges()
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
