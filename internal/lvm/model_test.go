package lvm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

const (
	mib = uint64(1) << 20
	gib = uint64(1) << 30
)

// modelState returns a state with VG "vg" on PVs of the given sizes.
func modelState(t *testing.T, sizes ...uint64) *State {
	t.Helper()
	s := &State{}
	var devs []string
	for i, size := range sizes {
		dev := fmt.Sprintf("/dev/sd%c", 'b'+i)
		mustApply(t, s, CreatePVOp{Device: dev, Size: size})
		devs = append(devs, dev)
	}
	mustApply(t, s, CreateVGOp{Name: "vg", Devices: devs, Tags: []string{Tag}})
	return s
}

func mustApply(t *testing.T, s *State, op Op) {
	t.Helper()
	if err := s.Apply(op); err != nil {
		t.Fatalf("%T %+v: %v", op, op, err)
	}
}

// checkAccounting checks the model's books: the VG's free extents are its PVs' free extents, and
// the PV extents every LV holds plus the free ones are the VG's.
func checkAccounting(t *testing.T, s *State) {
	t.Helper()
	for _, vg := range s.VGs {
		var pvFree, held uint64
		for _, pv := range s.PVsOf(vg.Name) {
			pvFree += pv.Free / vg.ExtentSize
		}
		for _, lv := range s.LVs {
			for _, seg := range lv.Segments {
				for _, d := range seg.Devices {
					if d[0] == '/' && lv.VGName == vg.Name {
						held += seg.Size / vg.ExtentSize / uint64(len(seg.Devices))
					}
				}
			}
		}
		if vg.FreeCount != pvFree || held+pvFree != vg.ExtentCount || vg.Free != vg.FreeCount*vg.ExtentSize {
			t.Fatalf("VG %s: free %d extents, PVs free %d, LVs hold %d, %d in all", vg.Name, vg.FreeCount, pvFree,
				held, vg.ExtentCount)
		}
		if vg.LVCount != len(s.LVsOf(vg.Name)) {
			t.Fatalf("VG %s: lv_count %d, %d visible LVs", vg.Name, vg.LVCount, len(s.LVsOf(vg.Name)))
		}
	}
}

func TestApplyThick(t *testing.T) {
	tests := []struct {
		name       string
		opts       LVOptions
		wantSize   uint64
		wantUsed   uint64 // VG extents taken
		wantPVs    int    // PVs the extents are on
		wantHidden int
		wantAttr   string
	}{
		{"linear rounds up to an extent", LVOptions{Name: "a", Size: 5 * mib}, 8 * mib, 2, 1, 0, "-wi-a-----"},
		{"striped", LVOptions{Name: "a", Size: 10 * mib, Stripes: 2}, 16 * mib, 4, 2, 0, "-wi-a-----"},
		{"raid1 two images with metadata", LVOptions{Name: "a", Size: 8 * mib, RAID: RAID1}, 8 * mib, 6, 2, 4,
			"rwi-a-r---"},
		{"raid5 three images", LVOptions{Name: "a", Size: 16 * mib, RAID: RAID5}, 16 * mib, 9, 3, 6, "rwi-a-r---"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := modelState(t, gib, gib, gib)
			before, _ := s.VG("vg")
			mustApply(t, s, CreateLVOp{VG: "vg", LVOptions: tt.opts})
			checkAccounting(t, s)
			lv, ok := s.LV("vg", "a")
			vg, _ := s.VG("vg")
			if !ok || lv.Size != tt.wantSize || lv.Attr.String() != tt.wantAttr {
				t.Fatalf("LV %+v, want size %d attr %s", lv, tt.wantSize, tt.wantAttr)
			}
			if used := before.FreeCount - vg.FreeCount; used != tt.wantUsed {
				t.Errorf("took %d extents, want %d", used, tt.wantUsed)
			}
			var on int
			for _, pv := range s.PVsOf("vg") {
				if pv.Free < pv.Size {
					on++
				}
			}
			hidden := len(s.LVs) - len(s.LVsOf("vg"))
			if on != tt.wantPVs || hidden != tt.wantHidden {
				t.Errorf("on %d PVs with %d sub-LVs, want %d and %d", on, hidden, tt.wantPVs, tt.wantHidden)
			}
			mustApply(t, s, RemoveLVOp{VG: "vg", Name: "a"})
			checkAccounting(t, s)
			if after, _ := s.VG("vg"); after.FreeCount != before.FreeCount || len(s.LVs) != 0 {
				t.Errorf("after remove: %d free extents (want %d), LVs %v", after.FreeCount, before.FreeCount, s.LVs)
			}
		})
	}
}

func TestApplyRefusalLeavesStateUnchanged(t *testing.T) {
	s := modelState(t, 64*mib, 64*mib)
	mustApply(t, s, CreateLVOp{VG: "vg", LVOptions: LVOptions{Name: "a", Size: 40 * mib}})
	tests := []struct {
		op   Op
		want error
		msg  string
	}{
		{CreateLVOp{VG: "vg", LVOptions: LVOptions{Name: "a", Size: mib}}, ErrAlreadyExists, "already exists"},
		{
			CreateLVOp{VG: "vg", LVOptions: LVOptions{Name: "b", Size: gib}},
			ErrInsufficientSpace,
			"insufficient free space",
		},
		{CreateLVOp{VG: "vg", LVOptions: LVOptions{Name: "b", Size: 8 * mib, Stripes: 3}}, ErrInsufficientSpace,
			"must not exceed number of physical volumes"},
		{CreateLVOp{VG: "nope", LVOptions: LVOptions{Name: "b", Size: mib}}, ErrNotFound, "not found"},
		{ExtendLVOp{VG: "vg", Name: "a", ExtendOptions: ExtendOptions{Size: 40 * mib}}, ErrSizeUnchanged,
			"matches existing size"},
		{ExtendLVOp{VG: "vg", Name: "a", ExtendOptions: ExtendOptions{Size: 4 * mib}}, ErrInvalidArgument,
			"not larger than"},
		{RemoveLVOp{VG: "vg", Name: "b"}, ErrNotFound, "Failed to find logical volume"},
		{RenameLVOp{VG: "vg", From: "b", To: "c"}, ErrNotFound, "not found"},
		{CreateThinLVOp{VG: "vg", ThinLVOptions: ThinLVOptions{Name: "t", Pool: "a", VirtualSize: mib}}, ErrNotFound,
			"Failed to find"},
		{RemoveVGOp{VG: "vg"}, nil, "not removed"},
		{ReduceVGOp{VG: "vg", Devices: []string{"/dev/sdb", "/dev/sdc"}}, nil, "still in use"},
	}
	for _, tt := range tests {
		before := s.Clone()
		err := s.Apply(tt.op)
		if err == nil ||
			tt.want != nil && (!errors.Is(err, tt.want) || !errors.Is(classify(asExecError(err)), tt.want)) {
			t.Errorf("%T: %v, want %v (and lvm2's message classified the same)", tt.op, err, tt.want)
		}
		if err != nil && !contains(err.Error(), tt.msg) {
			t.Errorf("%T: message %q lacks %q", tt.op, err, tt.msg)
		}
		if !reflect.DeepEqual(before, s) {
			t.Errorf("%T changed the state while refused", tt.op)
		}
	}
}

func TestApplyThin(t *testing.T) {
	s := modelState(t, gib)
	mustApply(t, s, CreateThinPoolOp{VG: "vg", ThinPoolOptions: ThinPoolOptions{
		Name: "pool", Extents: PercentOf(90, "FREE"), Zero: true}})
	checkAccounting(t, s)
	pool, _ := s.LV("vg", "pool")
	if pool.Attr.String() != "twi-a-tz--" || pool.SegType() != "thin-pool" || pool.MetadataSize != 4*mib {
		t.Fatalf("pool %+v", pool)
	}
	if vg, _ := s.VG("vg"); vg.FreeCount != 255-229 {
		t.Errorf(
			"90%%FREE of 255 extents left %d free, want 26 (data, metadata and spare within the 229)",
			vg.FreeCount,
		)
	}
	// lvm2 keeps the pool metadata spare as large as the largest pool metadata.
	before, _ := s.VG("vg")
	mustApply(t, s, ExtendLVOp{VG: "vg", Name: "pool", ExtendOptions: ExtendOptions{PoolMetadataSize: 16 * mib}})
	checkAccounting(t, s)
	after, _ := s.VG("vg")
	if spare, _ := s.LV("vg", "lvol0_pmspare"); before.FreeCount-after.FreeCount != 6 || spare.Size != 16*mib {
		t.Errorf("metadata 4 → 16 MiB took %d extents (want 3 + 3 of the spare), spare %d bytes",
			before.FreeCount-after.FreeCount, spare.Size)
	}
	mustApply(
		t,
		s,
		CreateThinLVOp{VG: "vg", ThinLVOptions: ThinLVOptions{Name: "t", Pool: "pool", VirtualSize: 2 * gib}},
	)
	mustApply(
		t,
		s,
		CreateSnapshotOp{VG: "vg", SnapshotOptions: SnapshotOptions{Name: "s", Origin: "t", ReadOnly: true}},
	)
	mustApply(
		t,
		s,
		CreateSnapshotOp{VG: "vg", SnapshotOptions: SnapshotOptions{Name: "c", Origin: "t", Activate: true}},
	)
	for name, want := range map[string]string{"t": "Vwi-a-tz--", "s": "Vri---tz-k", "c": "Vwi-a-tz--"} {
		if lv, _ := s.LV("vg", name); lv.Attr.String() != want || lv.PoolLV != "pool" {
			t.Errorf("%s: attr %s pool %q, want %s in pool", name, lv.Attr, lv.PoolLV, want)
		}
	}
	mustApply(t, s, ExtendLVOp{VG: "vg", Name: "t", ExtendOptions: ExtendOptions{Size: 3 * gib}})
	mustApply(t, s, RemoveLVOp{VG: "vg", Name: "t"})
	if s, _ := s.LV("vg", "s"); s.Origin != "" {
		t.Errorf("thin snapshot keeps removed origin %q", s.Origin)
	}
	mustApply(t, s, RenameLVOp{VG: "vg", From: "pool", To: "p2"})
	if c, _ := s.LV("vg", "c"); c.PoolLV != "p2" {
		t.Errorf("renamed pool: thin LV's pool %q", c.PoolLV)
	}
	mustApply(t, s, RemoveLVOp{VG: "vg", Name: "p2"})
	checkAccounting(t, s)
	if len(s.LVs) != 0 {
		t.Errorf("removing the last pool left %v", s.LVs)
	}
	mustApply(t, s, RemoveVGOp{VG: "vg"})
	if pv, _ := s.PV("/dev/sdb"); !pv.Orphan() || pv.Free != gib {
		t.Errorf("PV after vgremove: %+v", pv)
	}
}

// TestPlaced: the model knows where the extents of the LVs it made lie, and of none of a read.
func TestPlaced(t *testing.T) {
	s := modelState(t, gib, gib)
	mustApply(t, s, CreateLVOp{VG: "vg", LVOptions: LVOptions{Name: "m", Size: 8 * mib, RAID: RAID1}})
	mustApply(t, s, CreateLVOp{VG: "vg", LVOptions: LVOptions{Name: "l", Size: 8 * mib}})
	mustApply(t, s, CreateThinPoolOp{VG: "vg", ThinPoolOptions: ThinPoolOptions{Name: "p", Size: 64 * mib}})
	mustApply(t, s, CreateThinLVOp{VG: "vg", ThinLVOptions: ThinLVOptions{Name: "t", Pool: "p", VirtualSize: gib}})
	read := s.Clone()
	read.LVs = read.LVsOf("vg") // what lvm fullreport lists
	for _, name := range []string{"m", "l", "p", "t"} {
		if !s.Placed("vg", name) {
			t.Errorf("%s: not placed in the model's own state", name)
		}
	}
	for name, want := range map[string]bool{"m": false, "l": true, "p": false, "t": true, "nope": false} {
		if got := read.Placed("vg", name); got != want {
			t.Errorf("%s in a read state: placed %t, want %t", name, got, want)
		}
	}
}

func TestApplyCopyOnWriteSnapshot(t *testing.T) {
	s := modelState(t, gib)
	mustApply(t, s, CreateLVOp{VG: "vg", LVOptions: LVOptions{Name: "o", Size: 64 * mib}})
	mustApply(t, s, CreateSnapshotOp{VG: "vg", SnapshotOptions: SnapshotOptions{
		Name: "s", Origin: "o", Size: 5 * mib, ReadOnly: true}})
	checkAccounting(t, s)
	o, _ := s.LV("vg", "o")
	snap, _ := s.LV("vg", "s")
	if o.Attr.String() != "owi-a-s---" || snap.Attr.String() != "sri-a-s---" || snap.Size != 8*mib {
		t.Fatalf("origin %s, snapshot %s of %d bytes", o.Attr, snap.Attr, snap.Size)
	}
	mustApply(t, s, RemoveLVOp{VG: "vg", Name: "o"})
	checkAccounting(t, s)
	if len(s.LVs) != 0 {
		t.Errorf("removing the origin left %v", s.LVs)
	}
}

// TestApplyRandomSequences applies random ops and checks after each: the books; a refused op
// changed nothing; the LVs read before the op are as they were (Apply writes nothing in place).
func TestApplyRandomSequences(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 1))
		s := modelState(t, 256*mib, 128*mib, 512*mib)
		names := []string{"a", "b", "c", "d", "e"}
		for range 200 {
			name := names[r.IntN(len(names))]
			size := uint64(r.IntN(64)+1) * mib
			layouts := []LVOptions{{}, {Stripes: 2}, {RAID: RAID1}, {RAID: RAID5}, {RAID: RAID1, Mirrors: 2}}
			o := layouts[r.IntN(len(layouts))]
			o.Name, o.Size = name, size
			ops := []Op{
				CreateLVOp{VG: "vg", LVOptions: o},
				ExtendLVOp{VG: "vg", Name: name, ExtendOptions: ExtendOptions{Size: size * 2}},
				RemoveLVOp{VG: "vg", Name: name},
				RenameLVOp{VG: "vg", From: name, To: names[r.IntN(len(names))]},
				CreateSnapshotOp{
					VG:              "vg",
					SnapshotOptions: SnapshotOptions{Name: name + "s", Origin: name, Size: size},
				},
				CreateThinPoolOp{VG: "vg", ThinPoolOptions: ThinPoolOptions{Name: name, Size: size * 4}},
				CreateThinLVOp{VG: "vg", ThinLVOptions: ThinLVOptions{Name: name + "t", Pool: name, VirtualSize: size}},
				CreateSnapshotOp{VG: "vg", SnapshotOptions: SnapshotOptions{Name: name + "ts", Origin: name + "t"}},
				ExtendLVOp{VG: "vg", Name: name, ExtendOptions: ExtendOptions{PoolMetadataSize: size}},
				AddLVTagsOp{VG: "vg", Name: name, Tags: []string{"t" + name}},
				RemoveLVOp{VG: "vg", Name: name + "t"},
			}
			op := ops[r.IntN(len(ops))]
			before, read := s.Clone(), slices.Clone(s.LVs) // read: the LVs as a reader holds them
			if err := s.Apply(op); err != nil && !reflect.DeepEqual(before, s) {
				t.Fatalf("seed %d: refused %T%+v (%v) changed the state", seed, op, op, err)
			}
			if !reflect.DeepEqual(before.LVs, read) {
				t.Fatalf("seed %d: %T%+v changed LVs read before it", seed, op, op)
			}
			checkAccounting(t, s)
		}
		for _, lv := range slices.Clone(s.LVsOf("vg")) {
			_ = s.Apply(RemoveLVOp{VG: "vg", Name: lv.Name})
		}
		if vg, _ := s.VG("vg"); len(s.LVs) != 0 || vg.FreeCount != vg.ExtentCount {
			t.Fatalf("seed %d: after removing every LV: %d of %d extents free, LVs %v", seed, vg.FreeCount,
				vg.ExtentCount, s.LVs)
		}
	}
}

// asExecError is err as the failed lvm2 command the fake reports it as.
func asExecError(err error) error {
	if err == nil {
		return nil
	}
	return &exec.Error{Cmd: "lvm", ExitCode: ExitCode(err), Stderr: "  " + err.Error() + "\n",
		Err: fmt.Errorf("exit status %d", ExitCode(err))}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// Removing a thin LV gives what it mapped back to its pool's data percentage, unless it shares
// chunks with a thin snapshot: those stay until the next state read.
func TestApplyRemoveThinFreesPoolData(t *testing.T) {
	s := modelState(t, gib)
	mustApply(t, s, CreateThinPoolOp{VG: "vg", ThinPoolOptions: ThinPoolOptions{Name: "pool", Size: 400 * mib}})
	for _, n := range []string{"a", "b"} {
		mustApply(t, s, CreateThinLVOp{VG: "vg", ThinLVOptions: ThinLVOptions{Name: n, Pool: "pool", VirtualSize: gib}})
	}
	mustApply(t, s, CreateSnapshotOp{VG: "vg", SnapshotOptions: SnapshotOptions{Name: "snap", Origin: "b"}})
	set := func(name string, pct float64) {
		i, err := s.lvIndex("vg", name)
		if err != nil {
			t.Fatal(err)
		}
		s.LVs[i].DataPercent = pct
	}
	pool, _ := s.LV("vg", "pool")
	set("pool", 90)
	set("a", 10) // 102.4 MiB of the pool's 400: 25.6 %
	set("b", 20)
	mustApply(t, s, RemoveLVOp{VG: "vg", Name: "a"})
	if p, _ := s.LV("vg", "pool"); p.DataPercent < 64.39 || p.DataPercent > 64.41 {
		t.Errorf("pool data %.2f %% after removing a (%d bytes, 10 %% mapped), want 64.40 %%", p.DataPercent, pool.Size)
	}
	mustApply(t, s, RemoveLVOp{VG: "vg", Name: "b"}) // its chunks are the snapshot's too
	if p, _ := s.LV("vg", "pool"); p.DataPercent < 64.39 || p.DataPercent > 64.41 {
		t.Errorf("pool data %.2f %% after removing b, which shares its chunks with snap, want 64.40 %%", p.DataPercent)
	}
}

// TestApplyExtendPoolKeepsItsMappings: extending a thin pool's data or metadata maps the same
// chunks in more space, so the cached fill levels fall in proportion (the node agent, which
// extends a pool that fills up, must not see the old level and extend it again).
func TestApplyExtendPoolKeepsItsMappings(t *testing.T) {
	s := modelState(t, gib)
	mustApply(t, s, CreateThinPoolOp{VG: "vg", ThinPoolOptions: ThinPoolOptions{Name: "pool", Size: 200 * mib,
		MetadataSize: 4 * mib}})
	i, err := s.lvIndex("vg", "pool")
	if err != nil {
		t.Fatal(err)
	}
	s.LVs[i].DataPercent, s.LVs[i].MetadataPercent = 90, 80
	mustApply(t, s, ExtendLVOp{VG: "vg", Name: "pool", ExtendOptions: ExtendOptions{Size: 400 * mib}})
	mustApply(t, s, ExtendLVOp{VG: "vg", Name: "pool", ExtendOptions: ExtendOptions{PoolMetadataSize: 8 * mib}})
	if p, _ := s.LV("vg", "pool"); p.Size != 400*mib || p.DataPercent != 45 || p.MetadataPercent != 40 {
		t.Errorf("pool of %d bytes, data %.2f %%, metadata %.2f %%; want 400 MiB, 45 %% and 40 %%", p.Size,
			p.DataPercent, p.MetadataPercent)
	}
}
