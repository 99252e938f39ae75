package vgmanager_test

import (
	"slices"
	"strings"
	"testing"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// TestRAIDRefresh: a RAID LV that lvm2 says needs a refresh (its disk failed and is back) is
// refreshed on the next pass, and only that one; a class that is not RAID is left alone.
func TestRAIDRefresh(t *testing.T) {
	for _, raid := range []bool{true, false} {
		n := newNode([]string{"/dev/a", "/dev/b"}, nil)
		n.addVG("vg1", []string{"/dev/a", "/dev/b"}, lvm.Tag)
		vg, err := n.lvm.OwnedVG(t.Context(), "vg1")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"back", "fine"} {
			o := lvm.LVOptions{Name: name, Size: 64 << 20, RAID: lvm.RAID1}
			if err := n.lvm.CreateLV(t.Context(), vg, o); err != nil {
				t.Fatal(err)
			}
		}
		n.fake.SetHealth("vg1", "back", "refresh needed")
		n.fake.Reset()
		spec := withPaths(lvmv1alpha1.LVMVolumeGroupSpec{}, nil, "/dev/a", "/dev/b")
		if raid {
			spec.RAIDConfig = &lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1}
		}
		n.reconcile(t, vgmanager.Input{Name: "vg1", Spec: spec, NodeName: "n1"})
		refreshes := slices.DeleteFunc(n.lvmChanges(), func(c string) bool { return !strings.Contains(c, "--refresh") })
		want := 0
		if raid {
			want = 1
		}
		if len(refreshes) != want || (raid && !strings.HasSuffix(refreshes[0], " vg1/back")) {
			t.Errorf("RAID class %t: refreshes %q; want %d of vg1/back", raid, refreshes, want)
		}
	}
}
