package nodeagent

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// fakeLVs is an LVLister over fixed LVs per device class.
type fakeLVs map[string][]lvmd.LV

func (f fakeLVs) Capacities(context.Context) ([]lvmd.Capacity, error) {
	var out []lvmd.Capacity
	for c := range f {
		out = append(out, lvmd.Capacity{DeviceClass: c})
	}
	return out, nil
}

func (f fakeLVs) ListLVs(_ context.Context, class string) ([]lvmd.LV, error) { return f[class], nil }

func logicalVolume(name, uid, node, volumeID string) *topolvmv1.LogicalVolume {
	lv := &topolvmv1.LogicalVolume{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}}
	lv.Spec.NodeName, lv.Status.VolumeID = node, volumeID
	return lv
}

func lvs(vg string, names ...string) []lvmd.LV {
	var out []lvmd.LV
	for _, n := range names {
		lv := lvmd.LV{Name: n, VolumeGroup: vg, Size: 1 << 30, Path: "/dev/" + vg + "/" + n}
		if vg == "vg1" {
			lv.ThinPool = "pool"
		}
		out = append(out, lv)
	}
	return out
}

func TestOrphanReporter(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := topolvmv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		logicalVolume("pvc-a", "uid-a", "node-1", "uid-a"),
		logicalVolume("pvc-b", "uid-b", "node-1", ""), // being created: named by its UID
		logicalVolume("pvc-c", "uid-c", "node-1", "topolvm-id-c"),
		logicalVolume("pvc-r", "uid-r", "node-1", ""),         // a restore by copy in progress
		logicalVolume("pvc-x", "uid-x", "node-2", "uid-x"),    // another node's volume of that name
		logicalVolume("pvc-d", "uid-d", "node-1", "uid-done"), // restored, with a leftover
		logicalVolume("pvc-k", "uid-k", "node-1", ""),         // a clone by copy in progress
	).Build()
	src := fakeLVs{
		"thin":  lvs("vg1", "uid-a", "uid-b", "topolvm-id-c", "uid-r-restoring", "uid-x", "lost"),
		"thick": lvs("vg2", "uid-done", "uid-done-restoring", "uid-k-image", "uid-k-restoring", "uid-done-image"),
		"empty": nil,
	}
	rec := events.NewFakeRecorder(10)
	r, err := NewOrphanReporter(OrphanReporterOptions{Client: cl, Recorder: rec, LVs: src, NodeName: "node-1"})
	if err != nil {
		t.Fatal(err)
	}
	metric := func(thin, thick string) string {
		return `
# HELP lvms_orphan_logical_volumes LVs made by lvms in the device class that no LogicalVolume names (never removed automatically).
# TYPE lvms_orphan_logical_volumes gauge
lvms_orphan_logical_volumes{device_class="empty",node="node-1"} 0
lvms_orphan_logical_volumes{device_class="thick",node="node-1"} ` + thick + `
lvms_orphan_logical_volumes{device_class="thin",node="node-1"} ` + thin + "\n"
	}
	scan := func(wantThin, wantThick string) []string {
		t.Helper()
		if err := r.Scan(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := testutil.CollectAndCompare(r, strings.NewReader(metric(wantThin, wantThick))); err != nil {
			t.Error(err)
		}
		var got []string
		for len(rec.Events) > 0 {
			got = append(got, <-rec.Events)
		}
		return got
	}

	// The first scan only notes candidates: an LV between its removal and its LogicalVolume's end.
	if got := scan("0", "0"); len(got) != 0 {
		t.Errorf("first scan reported %q", got)
	}
	got := scan("2", "2")
	want := []string{
		"Warning OrphanLogicalVolume LV vg2/uid-done-image (1073741824 bytes, device class thick) was made " +
			"by lvms but no LogicalVolume names it (the leftover of an interrupted clone of uid-done); it is kept.",
		"Warning OrphanLogicalVolume LV vg2/uid-done-restoring (1073741824 bytes, device class thick) was made " +
			"by lvms but no LogicalVolume names it (the leftover of an interrupted restore of uid-done); it is kept.",
		"Warning OrphanLogicalVolume LV vg1/lost ",
		"Warning OrphanLogicalVolume LV vg1/uid-x ",
	}
	if len(got) != len(want) {
		t.Fatalf("events %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) || !strings.Contains(got[i], "on node node-1") {
			t.Errorf("event %q, want prefix %q", got[i], want[i])
		}
	}
	// A thick LV's extents are not zeroed by lvremove: the advice zeroes it first; a thin one's pool
	// zeroes what it hands out next.
	thick := "`lvchange -ay vg2/uid-done-restoring`, `blkdiscard --zeroout /dev/vg2/uid-done-restoring` then " +
		"`lvremove vg2/uid-done-restoring`"
	if !strings.Contains(got[1], thick) {
		t.Errorf("thick orphan's advice %q, want %q", got[1], thick)
	}
	if !strings.HasSuffix(got[2], "remove it on node node-1: `lvremove vg1/lost`") {
		t.Errorf("thin orphan's advice %q, want a plain lvremove", got[2])
	}
	if got := scan("2", "2"); len(got) != 0 {
		t.Errorf("an orphan was reported twice: %q", got)
	}
	// Removed by the admin: the count drops; nothing is ever removed by the reporter.
	src["thin"] = slices.DeleteFunc(src["thin"], func(lv lvmd.LV) bool { return lv.Name == "lost" })
	if got := scan("1", "2"); len(got) != 0 {
		t.Errorf("events %q", got)
	}
}
