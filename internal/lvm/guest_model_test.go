//go:build guest

package lvm_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// TestGuestModelFollowsLVM2 runs lvm2 commands of every kind the product runs on three disks and
// applies the same ops to the state model (lvm.State.Apply), starting from a read of the new VG as
// lvmd's cache does; after each step the model must equal a fresh read: the VG's extents, every
// PV's free space (where lvm2 placed the extents) and every visible LV's attributes, size, pool,
// origin, segment type, metadata size and tags; and what lvm2 refuses, the model refuses. After a
// difference the model goes on from lvm2's read, so one difference does not hide the next.
func TestGuestModelFollowsLVM2(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	vg := g.vgOn("gmodel", guestDisks(t, 3)...)
	model, err := g.lvm.State(ctx, "gmodel")
	g.must(err)
	const v = "gmodel"
	thick := func(name string, size uint64, raid lvm.RAIDType, stripes int) lvm.Op {
		return lvm.CreateLVOp{VG: v, LVOptions: lvm.LVOptions{Name: name, Size: size, RAID: raid, Stripes: stripes,
			Tags: []string{"pvc=" + name}}}
	}
	extend := func(name string, size uint64) lvm.Op {
		return lvm.ExtendLVOp{VG: v, Name: name, ExtendOptions: lvm.ExtendOptions{Size: size}}
	}
	steps := []lvm.Op{
		lvm.CreateThinPoolOp{VG: v, ThinPoolOptions: lvm.ThinPoolOptions{Name: "pool", Size: 256 * mib,
			ChunkSize: 64 << 10, Zero: true}},
		lvm.CreateThinLVOp{VG: v, ThinLVOptions: lvm.ThinLVOptions{Name: "thin", Pool: "pool", VirtualSize: gib}},
		lvm.CreateSnapshotOp{
			VG:              v,
			SnapshotOptions: lvm.SnapshotOptions{Name: "tsnap", Origin: "thin", ReadOnly: true},
		},
		lvm.CreateSnapshotOp{
			VG:              v,
			SnapshotOptions: lvm.SnapshotOptions{Name: "tclone", Origin: "thin", Activate: true},
		},
		thick("linear", 40*mib, "", 0),
		thick("striped", 20*mib, "", 2),
		thick("mirror", 16*mib, lvm.RAID1, 0),
		thick("parity", 24*mib, lvm.RAID5, 2),
		lvm.CreateSnapshotOp{VG: v, SnapshotOptions: lvm.SnapshotOptions{Name: "cow", Origin: "linear", Size: 8 * mib,
			ReadOnly: true}},
		extend("linear", 80*mib), // refused: an active origin of a copy-on-write snapshot
		lvm.SetReadAheadOp{VG: v, Name: "thin", ReadAhead: "2048"},
		lvm.SetReadAheadOp{
			VG:        v,
			Name:      "linear",
			ReadAhead: "8",
		}, // refused: the origin of copy-on-write snapshot "cow"
		lvm.SetReadAheadOp{VG: v, Name: "striped", ReadAhead: "3"},   // rounded up to one page
		lvm.SetReadAheadOp{VG: v, Name: "mirror", ReadAhead: "1001"}, // rounded down to a multiple of it
		lvm.SetReadAheadOp{VG: v, Name: "tclone", ReadAhead: lvm.ReadAheadNone},
		lvm.SetReadAheadOp{VG: v, Name: "thin", ReadAhead: lvm.ReadAheadAuto},
		extend("thin", 2*gib),
		extend("mirror", 32*mib),
		extend("striped", 40*mib),
		lvm.RenameLVOp{VG: v, From: "linear", To: "linear2"},
		lvm.RenameLVOp{VG: v, From: "mirror", To: "mirror2"},
		lvm.RemoveLVOp{VG: v, Name: "cow"},
		extend("linear2", 80*mib),
		lvm.RemoveLVOp{VG: v, Name: "mirror2"},
		lvm.RemoveLVOp{VG: v, Name: "thin"},
		lvm.RemoveLVOp{VG: v, Name: "striped"},
		thick("linear3", 64*mib, "", 0),
		extend("pool", 320*mib),
		lvm.ExtendLVOp{VG: v, Name: "pool", ExtendOptions: lvm.ExtendOptions{PoolMetadataSize: 16 * mib}},
		lvm.RemoveLVOp{VG: v, Name: "tsnap"},
		lvm.RemoveLVOp{VG: v, Name: "tclone"},
		lvm.RemoveLVOp{VG: v, Name: "pool"},
		lvm.RemoveLVOp{VG: v, Name: "parity"},
	}
	for i, op := range steps {
		lvmErr, modelErr := run(t, g.lvm, vg, op), model.Apply(op)
		if (lvmErr == nil) != (modelErr == nil) {
			t.Errorf("step %d %T%+v: lvm2: %v; the model: %v", i, op, op, lvmErr, modelErr)
		}
		lvm2, err := g.lvm.State(ctx, v)
		g.must(err)
		if diff := modelDiff(model, lvm2, v, true); diff != "" {
			t.Errorf("step %d %T%+v: the model differs from lvm2:\n%s", i, op, op, diff)
			model = lvm2 // go on from what lvm2 has, so one difference does not hide the next
		}
	}
}

// TestGuestModelFromARead: lvmd's cache starts from a state read, which lists no RAID images, pool
// data or metadata, or metadata spare. Removing a RAID LV, a thin pool and its spare (the last
// pool) from such a state returns their extents to the VG by the layout's arithmetic; the VG's
// free extents must then be lvm2's (the PVs' free space is not known without the sub-LVs).
func TestGuestModelFromARead(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	vg := g.vgOn("gread", guestDisks(t, 3)...)
	const v = "gread"
	g.must(g.lvm.CreateThinPool(ctx, vg, lvm.ThinPoolOptions{Name: "pool", Size: 128 * mib, Zero: true}))
	g.must(g.lvm.CreateThinLV(ctx, vg, lvm.ThinLVOptions{Name: "thin", Pool: "pool", VirtualSize: gib}))
	g.must(g.lvm.CreateLV(ctx, vg, lvm.LVOptions{Name: "mirror", Size: 24 * mib, RAID: lvm.RAID1, Mirrors: 2}))
	g.must(g.lvm.CreateLV(ctx, vg, lvm.LVOptions{Name: "parity", Size: 32 * mib, RAID: lvm.RAID5, Stripes: 2}))
	model, err := g.lvm.State(ctx, v)
	g.must(err)
	for i, op := range []lvm.Op{
		lvm.ExtendLVOp{VG: v, Name: "mirror", ExtendOptions: lvm.ExtendOptions{Size: 40 * mib}},
		lvm.RemoveLVOp{VG: v, Name: "mirror"},
		lvm.RemoveLVOp{VG: v, Name: "parity"},
		lvm.RemoveLVOp{VG: v, Name: "thin"},
		lvm.RemoveLVOp{VG: v, Name: "pool"},
	} {
		lvmErr, modelErr := run(t, g.lvm, vg, op), model.Apply(op)
		if lvmErr != nil || modelErr != nil {
			t.Fatalf("step %d %T%+v: lvm2: %v; the model: %v", i, op, op, lvmErr, modelErr)
		}
		lvm2, err := g.lvm.State(ctx, v)
		g.must(err)
		if diff := modelDiff(model, lvm2, v, false); diff != "" {
			t.Errorf("step %d %T%+v: the model differs from lvm2:\n%s", i, op, op, diff)
			model = lvm2
		}
	}
}

// run runs op's command through the Client.
func run(t *testing.T, c *lvm.Client, vg lvm.VG, op lvm.Op) error {
	ctx := t.Context()
	switch o := op.(type) {
	case lvm.CreateLVOp:
		return c.CreateLV(ctx, vg, o.LVOptions)
	case lvm.CreateThinPoolOp:
		return c.CreateThinPool(ctx, vg, o.ThinPoolOptions)
	case lvm.CreateThinLVOp:
		return c.CreateThinLV(ctx, vg, o.ThinLVOptions)
	case lvm.CreateSnapshotOp:
		return c.CreateSnapshot(ctx, vg, o.SnapshotOptions)
	case lvm.ExtendLVOp:
		return c.ExtendLV(ctx, vg, o.Name, o.ExtendOptions)
	case lvm.RenameLVOp:
		return c.RenameLV(ctx, vg, o.From, o.To)
	case lvm.RemoveLVOp:
		return c.RemoveLV(ctx, vg, o.Name)
	case lvm.SetReadAheadOp:
		return c.SetReadAhead(ctx, vg, o.Name, o.ReadAhead)
	}
	return fmt.Errorf("no command for %T", op)
}

// modelDiff lists how the model's VG vg differs from lvm2's (with pvs, the PVs' free space too).
func modelDiff(model, lvm2 *lvm.State, vg string, pvs bool) string {
	var out []string
	mv, _ := model.VG(vg)
	rv, _ := lvm2.VG(vg)
	if mv.ExtentCount != rv.ExtentCount || mv.FreeCount != rv.FreeCount || mv.LVCount != rv.LVCount {
		out = append(out, fmt.Sprintf("VG extents %d free %d LVs %d; lvm2 %d free %d LVs %d",
			mv.ExtentCount, mv.FreeCount, mv.LVCount, rv.ExtentCount, rv.FreeCount, rv.LVCount))
	}
	for _, r := range lvm2.PVsOf(vg) {
		if m, _ := model.PV(r.Name); pvs && m.Free != r.Free {
			out = append(out, fmt.Sprintf("PV %s free %d MiB; lvm2 %d MiB", r.Name, m.Free>>20, r.Free>>20))
		}
	}
	for _, r := range lvm2.LVsOf(vg) {
		m, ok := model.LV(vg, r.Name)
		if !ok {
			out = append(out, "LV "+r.Name+": not in the model")
			continue
		}
		if m.Attr != r.Attr || m.Size != r.Size || m.PoolLV != r.PoolLV || m.Origin != r.Origin ||
			m.SegType() != r.SegType() || m.MetadataSize != r.MetadataSize || !slices.Equal(m.Tags, r.Tags) ||
			m.ReadAhead != r.ReadAhead {
			out = append(out, fmt.Sprintf("LV %s: attr %s size %d pool %q origin %q seg %s meta %d tags %v "+
				"read-ahead %s; lvm2 attr %s size %d pool %q origin %q seg %s meta %d tags %v read-ahead %s", r.Name,
				m.Attr, m.Size, m.PoolLV, m.Origin, m.SegType(), m.MetadataSize, m.Tags, m.ReadAhead,
				r.Attr, r.Size, r.PoolLV, r.Origin, r.SegType(), r.MetadataSize, r.Tags, r.ReadAhead))
		}
	}
	if len(model.LVsOf(vg)) != len(lvm2.LVsOf(vg)) {
		out = append(out, fmt.Sprintf("%d visible LVs; lvm2 %d", len(model.LVsOf(vg)), len(lvm2.LVsOf(vg))))
	}
	return strings.Join(out, "\n")
}
