package vgmanager_test

import (
	"fmt"
	"strings"
	"testing"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
)

// TestThinPoolAutoExtends: with autoExtend, a pool whose data reaches the threshold is extended by
// its percent, once per fill (the same chunks in a larger pool are a lower fill level), and never
// beyond maxSizePercent of the VG less its metadata and spare; metadata at the threshold grows
// likewise. Below the threshold, and without autoExtend, nothing changes.
func TestThinPoolAutoExtends(t *testing.T) {
	n := newNode(nil, nil)
	n.disk("/dev/sdb", 10*gib)
	spec := thinSpec("")
	spec.ThinPoolConfig.SizePercent = 50
	spec.ThinPoolConfig.AutoExtend = &lvmv1alpha1.ThinPoolAutoExtend{ThresholdPercent: 80, Percent: 20,
		MaxSizePercent: 70}
	in := vgmanager.Input{Name: "vg1", Spec: spec}
	n.reconcile(t, in)
	pool := func() (uint64, uint64, float64) {
		lv, _ := n.fake.State().LV("vg1", "tp")
		return lv.Size / (4 << 20), lv.MetadataSize, lv.DataPercent
	}
	first, meta, _ := pool()
	step := func(data, metadata float64) []string {
		t.Helper()
		n.fake.SetUsage("vg1", "tp", data, metadata)
		n.fake.Reset()
		if out := n.reconcile(t, in); out.Status.Status == lvmv1alpha1.VGStatusFailed {
			t.Fatalf("status %+v", out.Status)
		}
		return n.modifications()
	}

	if got := step(79.9, 10); len(got) != 0 {
		t.Errorf("below the threshold: %q", got)
	}
	want := first + (first*20+99)/100
	if got := step(85, 10); len(got) != 1 || got[0] != fmt.Sprintf("lvm lvextend -y -l %d vg1/tp", want) {
		t.Fatalf("data at 85%% of a pool of %d extents: %q, want one lvextend to %d", first, got, want)
	}
	if size, _, pct := pool(); size != want || pct > 71 {
		t.Errorf("after the extension: %d extents, data %.1f %%; want %d and the level lower", size, pct, want)
	}
	n.fake.Reset()
	if n.reconcile(t, in); len(n.modifications()) != 0 {
		t.Errorf("extended again without new data: %q", n.modifications())
	}

	// Filled again and again: the pool stops at 70% of the VG's 2559 extents less 2 × its metadata.
	for range 5 {
		step(95, 10)
	}
	metaExt := meta / (4 << 20)
	if size, _, _ := pool(); size != 2559*70/100-2*metaExt {
		t.Errorf("pool of %d extents after repeated fills, want %d (70%% of the VG less metadata and spare)",
			size, 2559*70/100-2*metaExt)
	}

	got := step(50, 90)
	if len(got) != 1 || !strings.HasPrefix(got[0], "lvm lvextend -y --poolmetadatasize ") {
		t.Fatalf("metadata at 90%%: %q, want one metadata extension", got)
	}
	if _, m, _ := pool(); m <= meta {
		t.Errorf("metadata %d bytes, want more than %d", m, meta)
	}

	plain := newNode(nil, nil)
	plain.disk("/dev/sdb", 10*gib)
	pin := vgmanager.Input{Name: "vg1", Spec: thinSpec("")}
	plain.reconcile(t, pin)
	plain.fake.SetUsage("vg1", "tp", 99, 99)
	plain.fake.Reset()
	if plain.reconcile(t, pin); len(plain.modifications()) != 0 {
		t.Errorf("without autoExtend: %q", plain.modifications())
	}
}
