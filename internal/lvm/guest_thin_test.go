//go:build guest

package lvm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

func TestGuestThinPoolAndSnapshots(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	disks := guestDisks(t, 2)
	vg := g.vgOn("gthin", disks...)

	timed(t, "lvcreate thin pool", func() error {
		return g.lvm.CreateThinPool(ctx, vg, lvm.ThinPoolOptions{
			Name: "pool", Extents: lvm.PercentOf(50, "FREE"), ChunkSize: 128 << 10, MetadataSize: 8 * mib,
		})
	})
	pool := g.lv("gthin", "pool")
	if !pool.Attr.IsThinPool() || !pool.Attr.Active() || pool.SegType() != "thin-pool" ||
		pool.Segments[0].ChunkSize != 128<<10 || pool.MetadataSize != 8*mib || pool.Attr.Zero {
		t.Errorf("pool = %+v", pool)
	}
	vgNow := g.vg("gthin")
	// The metadata LV and its spare come out of the free space first.
	if want := vg.Free / 2; pool.Size < want-2*pool.MetadataSize-vgNow.ExtentSize || pool.Size > want+vgNow.ExtentSize {
		t.Errorf("pool size %d, want about 50%% of %d", pool.Size, vg.Free)
	}

	// Thin LVs: one lvm exec each.
	var creates []time.Duration
	for i := range 5 {
		name := fmt.Sprintf("thin%d", i)
		before := g.host.Counter().Count(lvm.Command)
		creates = append(creates, timed(t, "lvcreate thin "+name, func() error {
			return g.lvm.CreateThinLV(ctx, vg, lvm.ThinLVOptions{Name: name, Pool: "pool", VirtualSize: gib})
		}))
		if n := g.host.Counter().Count(lvm.Command) - before; n != 1 {
			t.Errorf("CreateThinLV ran lvm %d times", n)
		}
	}
	t.Logf("TIMING lvcreate thin median of 5: %v", median(creates).Round(time.Millisecond))
	thin := g.lv("gthin", "thin0")
	if !thin.Attr.IsThin() || thin.PoolLV != "pool" || thin.Size != gib || !thin.Attr.Active() {
		t.Errorf("thin0 = %+v", thin)
	}
	// Over-provisioning beyond the pool is allowed for thin LVs.
	g.must(g.lvm.CreateThinLV(ctx, vg, lvm.ThinLVOptions{Name: "big", Pool: "pool", VirtualSize: 8 * gib}))

	// Data lands in the pool.
	g.sh("dd", "if=/dev/urandom", "of="+thin.Path, "bs=1M", "count=16", "oflag=direct")
	sum := g.sh("sh", "-c", "head -c 16777216 "+thin.Path+" | md5sum")
	if p := g.lv("gthin", "pool"); p.DataPercent <= 0 || p.MetadataPercent <= 0 {
		t.Errorf("pool usage after writing: data %.2f%% metadata %.2f%%", p.DataPercent, p.MetadataPercent)
	}

	checkThinSnapshots(t, g, vg, sum)
	checkThinGrowth(t, g, vg)

	// Removing the pool's users, then the pool.
	for _, n := range []string{"snap", "clone", "big", "thin0", "thin1", "thin2", "thin3", "thin4"} {
		g.must(g.lvm.RemoveLV(ctx, vg, n))
	}
	g.must(g.lvm.RemoveLV(ctx, vg, "pool"))
	if lvs := g.state().LVsOf("gthin"); len(lvs) != 0 {
		t.Errorf("LVs left: %+v", lvs)
	}
}

func checkThinSnapshots(t *testing.T, g *guest, vg lvm.VG, sum string) {
	t.Helper()
	ctx := t.Context()
	// Thin snapshot, activated in the same lvcreate.
	timed(t, "lvcreate thin snapshot (active)", func() error {
		return g.lvm.CreateSnapshot(ctx, vg, lvm.SnapshotOptions{Name: "clone", Origin: "thin0", Activate: true})
	})
	clone := g.lv("gthin", "clone")
	if !clone.Attr.IsThin() || clone.Origin != "thin0" || !clone.Attr.Active() || !clone.Attr.Writable() ||
		clone.Attr.SkipActive {
		t.Errorf("clone = %+v", clone)
	}
	if got := g.sh("sh", "-c", "head -c 16777216 "+clone.Path+" | md5sum"); got != sum {
		t.Errorf("clone content %s != origin %s", got, sum)
	}

	// Read-only thin snapshot: inactive (activation skip) until lvchange -ay -K.
	timed(t, "lvcreate thin snapshot (read-only, inactive)", func() error {
		return g.lvm.CreateSnapshot(ctx, vg, lvm.SnapshotOptions{Name: "snap", Origin: "thin0", ReadOnly: true})
	})
	snap := g.lv("gthin", "snap")
	if snap.Attr.Active() || !snap.Attr.SkipActive || snap.Attr.Writable() {
		t.Errorf("snap before activation = %+v", snap)
	}
	timed(t, "lvchange -ay -K", func() error {
		return g.lvm.ActivateLV(ctx, vg, "snap", lvm.ActivateOptions{Active: true, IgnoreSkip: true})
	})
	if snap = g.lv("gthin", "snap"); !snap.Attr.Active() {
		t.Errorf("snap after activation = %+v", snap)
	}
	if _, err := execRun(g, "dd", "if=/dev/zero", "of="+snap.Path, "bs=4096", "count=1", "oflag=direct"); err == nil {
		t.Error("writing to a read-only snapshot succeeded")
	}
}

func checkThinGrowth(t *testing.T, g *guest, vg lvm.VG) {
	t.Helper()
	ctx := t.Context()
	// Grow a thin LV, the pool data and the pool metadata.
	timed(t, "lvextend thin", func() error {
		return g.lvm.ExtendLV(ctx, vg, "thin1", lvm.ExtendOptions{Size: 2 * gib})
	})
	if got := g.lv("gthin", "thin1").Size; got != 2*gib {
		t.Errorf("thin1 size after extend = %d", got)
	}
	g.must(g.lvm.ExtendLV(ctx, vg, "pool", lvm.ExtendOptions{PoolMetadataSize: 16 * mib}))
	if got := g.lv("gthin", "pool").MetadataSize; got != 16*mib {
		t.Errorf("pool metadata after extend = %d, want %d", got, 16*mib)
	}
	before := g.lv("gthin", "pool").Size
	g.must(g.lvm.ExtendLV(ctx, vg, "pool", lvm.ExtendOptions{Extents: lvm.PercentOf(80, "VG")}))
	if got := g.lv("gthin", "pool").Size; got <= before {
		t.Errorf("pool size after extend to 80%%VG = %d, before %d", got, before)
	}
}

func TestGuestExtendMountedFilesystem(t *testing.T) {
	tests := []struct {
		fs     string
		mkfs   []string
		grow   func(dev, mnt string) []string
		sizeMB uint64
	}{
		{
			"ext4",
			[]string{"mkfs.ext4", "-q", "-F"},
			func(dev, _ string) []string { return []string{"resize2fs", dev} },
			64,
		},
		{
			"xfs",
			[]string{"mkfs.xfs", "-q", "-f"},
			func(_, mnt string) []string { return []string{"xfs_growfs", mnt} },
			320,
		},
		{
			"btrfs",
			[]string{"mkfs.btrfs", "-q", "-f"},
			func(_, mnt string) []string { return []string{"btrfs", "filesystem", "resize", "max", mnt} },
			200,
		},
	}
	for _, tt := range tests {
		t.Run(tt.fs, func(t *testing.T) {
			g := newGuest(t)
			ctx := t.Context()
			disks := guestDisks(t, 1)
			vg := g.vgOn("gfs", disks[0])
			g.must(g.lvm.CreateThinPool(ctx, vg, lvm.ThinPoolOptions{Name: "pool", Size: gib}))
			g.must(
				g.lvm.CreateThinLV(ctx, vg, lvm.ThinLVOptions{Name: "vol", Pool: "pool", VirtualSize: tt.sizeMB * mib}),
			)
			g.must(g.lvm.CreateLV(ctx, vg, lvm.LVOptions{Name: "thick", Size: tt.sizeMB * mib}))
			for _, name := range []string{"vol", "thick"} {
				dev := "/dev/gfs/" + name
				mnt := filepath.Join(t.TempDir(), name)
				if err := os.Mkdir(mnt, 0o755); err != nil {
					t.Fatal(err)
				}
				g.sh(tt.mkfs[0], append(tt.mkfs[1:], dev)...)
				g.sh("mount", dev, mnt)
				t.Cleanup(func() { g.try("umount", mnt) })
				sizeBefore := fsSize(t, mnt)
				timed(t, "lvextend mounted "+tt.fs+" "+name, func() error {
					return g.lvm.ExtendLV(ctx, vg, name, lvm.ExtendOptions{Size: 2 * tt.sizeMB * mib})
				})
				grow := tt.grow(dev, mnt)
				timed(t, grow[0]+" "+name, func() error {
					_, err := execRun(g, grow[0], grow[1:]...)
					return err
				})
				sizeAfter := fsSize(t, mnt)
				t.Logf("%s on %s: %d -> %d bytes", tt.fs, name, sizeBefore, sizeAfter)
				if sizeAfter < sizeBefore+tt.sizeMB*mib*8/10 {
					t.Errorf("%s on %s did not grow: %d -> %d", tt.fs, name, sizeBefore, sizeAfter)
				}
				if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("data"), 0o600); err != nil {
					t.Error(err)
				}
				if err := g.lvm.RemoveLV(ctx, vg, name); !lvm.IsInUse(err) {
					t.Errorf("lvremove of a mounted LV: %v", err)
				}
				g.sh("umount", mnt)
			}
		})
	}
}

func fsSize(t *testing.T, mnt string) uint64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * uint64(st.Bsize)
}
