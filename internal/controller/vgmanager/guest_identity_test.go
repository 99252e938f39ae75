//go:build guest

package vgmanager_test

import (
	"slices"
	"strings"
	"testing"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// TestGuestNodeIdentity: on real lvm2, node-a's VG carries its identity tags; node-b (a disk shared
// between nodes) and another cluster refuse to touch it; a VG made without identity
// (by LVMS) is adopted and tagged.
func TestGuestNodeIdentity(t *testing.T) {
	d := guestDisks(t)
	disk := d[6]
	const vg = "gvgid"
	g := newGuest(t, []string{vg}, []string{disk})
	g.disks.visible = []string{disk}
	spec := lvmv1alpha1.LVMVolumeGroupSpec{
		DeviceSelector: &lvmv1alpha1.DeviceSelector{Paths: []lvmv1alpha1.DevicePath{lvmv1alpha1.DevicePath(disk)}},
		ThinPoolConfig: &lvmv1alpha1.ThinPoolConfig{Name: "tp", SizePercent: 90, OverprovisionRatio: 10},
	}
	nodeA := lvm.Identity{Node: "node-a", Cluster: "8a7e0c55-2f1b-4e0e-9d3c-5b6f1a2b3c4d"}
	in := vgmanager.Input{Name: vg, Spec: spec, NodeName: nodeA.Node, Identity: nodeA}

	if out := g.reconcile(in); out.Status.Status != lvmv1alpha1.VGStatusReady {
		t.Fatalf("node-a: %+v", out.Status)
	}
	if v, _ := g.state(vg); !slices.Contains(v.Tags, "lvms.node=node-a") ||
		!slices.Contains(v.Tags, "lvms.cluster="+nodeA.Cluster) {
		t.Fatalf("VG tags %v lack node-a's identity", v.Tags)
	}
	// A thin LV made by lvmd's client carries the identity too; lvm2 reports the tags back.
	v, _ := g.state(vg)
	if err := g.lvm.WithIdentity(nodeA).CreateThinLV(t.Context(), v,
		lvm.ThinLVOptions{Name: "lv1", Pool: "tp", VirtualSize: 64 << 20, Tags: []string{lvm.Tag}}); err != nil {
		t.Fatal(err)
	}
	if _, s := g.state(vg); !slices.ContainsFunc(s.LVs, func(l lvm.LV) bool {
		return l.Name == "lv1" && slices.Contains(l.Tags, "lvms.node=node-a")
	}) {
		t.Fatalf("lv1 lacks the node tag: %+v", s.LVs)
	}

	for _, other := range []lvm.Identity{
		{Node: "node-b", Cluster: nodeA.Cluster},
		{Node: "node-a", Cluster: "another-cluster"},
	} {
		// The report covers the metadata; the checksum the PV label, metadata area and first extents.
		head := "dd if=" + disk + " bs=1M count=64 status=none | sha256sum"
		before := g.sh("lvm", lvm.ReportArgs()...) + g.sh("sh", "-c", head)
		out := g.reconcile(vgmanager.Input{Name: vg, Spec: spec, NodeName: other.Node, Identity: other})
		if out.Status.Status != lvmv1alpha1.VGStatusFailed ||
			!strings.Contains(out.Status.Reason, "is not this node's") {
			t.Errorf("%+v: status %s %q, want Failed: not this node's", other, out.Status.Status, out.Status.Reason)
		}
		v, _ := g.state(vg)
		if err := g.lvm.WithIdentity(other).RemoveLV(t.Context(), v, "lv1"); !lvm.IsForeign(err) {
			t.Errorf("%+v: lvremove of node-a's LV = %v, want refused", other, err)
		}
		if after := g.sh("lvm", lvm.ReportArgs()...) + g.sh("sh", "-c", head); after != before {
			t.Errorf("%+v changed node-a's VG:\nbefore %s\nafter  %s", other, before, after)
		}
	}

	// A VG LVMS made (only @lvms) is adopted: the identity tags are added, nothing else changes.
	g.sh("lvm", "vgchange", "--deltag", "lvms.node=node-a", "--deltag", "lvms.cluster="+nodeA.Cluster, vg)
	if out := g.reconcile(in); out.Status.Status != lvmv1alpha1.VGStatusReady {
		t.Fatalf("adopt: %+v", out.Status)
	}
	if v, _ := g.state(vg); !slices.Contains(v.Tags, "lvms.node=node-a") || !slices.Contains(v.Tags, lvm.Tag) {
		t.Fatalf("adopted VG tags %v", v.Tags)
	}
}
