package lvmtest_test

import (
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvm/lvmtest"
)

// TestStateAllShowsInternalLVs: State leaves lvm2's internal LVs out, as `lvm fullreport` does;
// StateAll (`--all`) reads a raid1 LV's image and metadata sub-LVs with the PVs they lie on.
func TestStateAllShowsInternalLVs(t *testing.T) {
	f := lvmtest.New()
	f.AddDevice("/dev/a", 1024*mib)
	f.AddDevice("/dev/b", 1024*mib)
	f.Apply(lvm.CreatePVOp{Device: "/dev/a", Size: 1024 * mib}, lvm.CreatePVOp{Device: "/dev/b", Size: 1024 * mib},
		lvm.CreateVGOp{Name: "vg", Devices: []string{"/dev/a", "/dev/b"}, Tags: []string{lvm.Tag}})
	c := lvm.New(f)
	vg, err := c.OwnedVG(t.Context(), "vg")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateLV(t.Context(), vg, lvm.LVOptions{Name: "r", Size: 64 * mib, RAID: lvm.RAID1}); err != nil {
		t.Fatal(err)
	}
	s, err := c.State(t.Context(), "vg")
	if err != nil || len(s.LVs) != 1 {
		t.Fatalf("State: %+v, %v; want the RAID LV alone", s, err)
	}
	all, err := c.StateAll(t.Context(), "vg")
	if err != nil {
		t.Fatal(err)
	}
	pvs := map[string]string{}
	for _, lv := range all.LVs {
		if lv.Hidden {
			pvs[lv.Name] = lv.PVNames()[0]
		}
	}
	if len(all.LVs) != 5 || pvs["r_rimage_0"] == "" || pvs["r_rimage_0"] == pvs["r_rimage_1"] ||
		pvs["r_rmeta_0"] != pvs["r_rimage_0"] {
		t.Fatalf(
			"StateAll: %d LVs, sub-LVs on %v; want the RAID LV and 4 hidden sub-LVs, one image per PV",
			len(all.LVs),
			pvs,
		)
	}
}
