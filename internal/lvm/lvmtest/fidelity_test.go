package lvmtest_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvm/lvmtest"
)

const mib = uint64(1) << 20

// TestModelMatchesRealLVM2 runs, through the lvm Client, the commands with which the guest test
// TestGuestReportCapture made testdata/fullreport-guest-all-kinds.json on real lvm2 (two 2 GiB
// disks), and compares what the fake reports with what lvm2 reported: VG extents, every LV's
// attributes, size, pool, origin, metadata size and segment type, and the PVs' free space.
func TestModelMatchesRealLVM2(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "fullreport-guest-all-kinds.json"))
	if err != nil {
		t.Fatal(err)
	}
	lvm2, err := lvm.ParseReport(raw)
	if err != nil {
		t.Fatal(err)
	}
	f := lvmtest.New()
	f.AddDevice("/dev/ubda", 2048*mib)
	f.AddDevice("/dev/ubdb", 2048*mib)
	c := lvm.New(f)
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.CreateVG(ctx, "gcap", []string{"/dev/ubda", "/dev/ubdb"}))
	vg, err := c.OwnedVG(ctx, "gcap")
	must(err)
	must(c.CreateThinPool(ctx, vg, lvm.ThinPoolOptions{Name: "pool", Size: 256 * mib, ChunkSize: 64 << 10}))
	must(c.CreateThinLV(ctx, vg, lvm.ThinLVOptions{Name: "thin", Pool: "pool", VirtualSize: 1024 * mib,
		Tags: []string{"pvc-x"}}))
	must(c.CreateSnapshot(ctx, vg, lvm.SnapshotOptions{Name: "tsnap", Origin: "thin", ReadOnly: true}))
	must(c.CreateSnapshot(ctx, vg, lvm.SnapshotOptions{Name: "tclone", Origin: "thin", Activate: true}))
	must(c.CreateLV(ctx, vg, lvm.LVOptions{Name: "mirror", Size: 16 * mib, RAID: lvm.RAID1, Mirrors: 1}))
	must(c.CreateLV(ctx, vg, lvm.LVOptions{Name: "thick", Size: 32 * mib}))
	must(c.CreateSnapshot(ctx, vg, lvm.SnapshotOptions{Name: "cow", Origin: "thick", Size: 8 * mib}))
	model, err := c.State(ctx, "gcap")
	must(err)

	rv, _ := lvm2.VG("gcap")
	mv, _ := model.VG("gcap")
	if mv.ExtentCount != rv.ExtentCount || mv.FreeCount != rv.FreeCount || mv.LVCount != rv.LVCount ||
		mv.PVCount != rv.PVCount || mv.Size != rv.Size || mv.Free != rv.Free {
		t.Errorf("VG: model %+v\nlvm2  %+v", mv, rv)
	}
	var realFree, modelFree []uint64
	for _, pv := range lvm2.PVsOf("gcap") {
		realFree = append(realFree, pv.Free)
	}
	for _, pv := range model.PVsOf("gcap") {
		modelFree = append(modelFree, pv.Free)
	}
	slices.Sort(realFree)
	slices.Sort(modelFree)
	if !slices.Equal(realFree, modelFree) {
		t.Errorf("PV free bytes: model %v, lvm2 %v", modelFree, realFree)
	}
	for _, r := range lvm2.LVsOf("gcap") {
		m, ok := model.LV("gcap", r.Name)
		if !ok {
			t.Errorf("LV %s: not in the model", r.Name)
			continue
		}
		if m.Attr != r.Attr || m.Size != r.Size || m.PoolLV != r.PoolLV || m.Origin != r.Origin ||
			m.MetadataSize != r.MetadataSize || m.SegType() != r.SegType() || !slices.Equal(m.Tags, r.Tags) {
			t.Errorf("LV %s:\nmodel attr %s size %d pool %q origin %q meta %d seg %s tags %v\n"+
				"lvm2  attr %s size %d pool %q origin %q meta %d seg %s tags %v", r.Name,
				m.Attr, m.Size, m.PoolLV, m.Origin, m.MetadataSize, m.SegType(), m.Tags,
				r.Attr, r.Size, r.PoolLV, r.Origin, r.MetadataSize, r.SegType(), r.Tags)
		}
	}
}
