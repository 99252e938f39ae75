package vgmanager_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

func TestThinPoolMetadataGrows(t *testing.T) {
	n := newNode([]string{"/dev/sdb"}, nil)
	spec := thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyStatic)
	spec.ThinPoolConfig.SizePercent = 50
	spec.ThinPoolConfig.MetadataSizeCalculationPolicy = lvmv1alpha1.MetadataSizeCalculationPolicyStatic
	spec.ThinPoolConfig.MetadataSize = ptr.To(resource.MustParse("8Mi"))
	n.reconcile(t, vgmanager.Input{Name: "vg1", Spec: spec})
	if got := n.modifications()[1]; got != "lvm lvcreate -y --type thin-pool -n tp -l 50%FREE -c 131072b "+
		"--poolmetadatasize 8388608b -Z y vg1" {
		t.Errorf("pool created with %q", got)
	}
	n.fake.Reset()
	spec.ThinPoolConfig.MetadataSize = ptr.To(resource.MustParse("16Mi"))
	out := n.reconcile(t, vgmanager.Input{Name: "vg1", Spec: spec})
	want := []string{"lvm lvextend -y --poolmetadatasize 16777216b vg1/tp"}
	if got := n.modifications(); !slices.Equal(got, want) || out.Status.Status != lvmv1alpha1.VGStatusReady {
		t.Errorf("changes %q (want %q), status %+v", got, want, out.Status)
	}
}

func TestStaticMetadataDefault(t *testing.T) {
	n := newNode(nil, nil)
	n.disk("/dev/sdb", 8*gib)
	spec := thinSpec("")
	spec.ThinPoolConfig.SizePercent = 50
	spec.ThinPoolConfig.MetadataSizeCalculationPolicy = lvmv1alpha1.MetadataSizeCalculationPolicyStatic
	n.reconcile(t, vgmanager.Input{Name: "vg1", Spec: spec})
	// Upstream LVMS: the Static policy without metadataSize means 1Gi.
	if got := n.modifications()[1]; got != "lvm lvcreate -y --type thin-pool -n tp -l 50%FREE -c 131072b "+
		"--poolmetadatasize 1073741824b -Z y vg1" {
		t.Errorf("pool created with %q", got)
	}
}

// TestThinPoolZeroingTurnedOn: a pool that does not zero new chunks (made before lvms zeroed, or by
// hand) would hand a new volume the previous tenant's data in the parts of a chunk it has not
// written; the manager turns zeroing on once.
func TestThinPoolZeroingTurnedOn(t *testing.T) {
	n := newNode([]string{"/dev/sdb", "/dev/sdc"}, nil)
	n.addVG("vg1", []string{"/dev/sdb", "/dev/sdc"}, lvm.Tag)
	n.addPool("vg1", false)
	in := vgmanager.Input{Name: "vg1", Spec: thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic)}
	out := n.reconcile(t, in)
	if got, want := n.modifications(), []string{"lvm lvchange --zero y vg1/tp"}; !slices.Equal(got, want) ||
		out.Status.Status != lvmv1alpha1.VGStatusReady {
		t.Errorf("changes %q (want %q), status %+v", got, want, out.Status)
	}
	n.fake.Reset()
	n.reconcile(t, in)
	if got := n.modifications(); len(got) != 0 {
		t.Errorf("second pass changed %q", got)
	}
}

// TestThinPoolFullIsDegraded: a thin pool filled to vgmanager.PoolFullPercent of its data or its
// metadata makes the volume group Degraded with a reason naming the pool and the level, and it is
// Ready again once the pool drains; a thick class has no pool to report.
func TestThinPoolFullIsDegraded(t *testing.T) {
	n := newNode([]string{"/dev/sdb"}, nil)
	in := vgmanager.Input{Name: "vg1", Spec: thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyStatic)}
	if out := n.reconcile(t, in); out.Status.Status != lvmv1alpha1.VGStatusReady {
		t.Fatalf("new pool: %+v", out.Status)
	}
	for _, tc := range []struct {
		name       string
		data, meta float64
		want       lvmv1alpha1.VGStatusType
		reason     []string
	}{
		{name: "just below", data: 84.9, meta: 84.9, want: lvmv1alpha1.VGStatusReady},
		{name: "data at the threshold", data: 85, meta: 10, want: lvmv1alpha1.VGStatusDegraded,
			reason: []string{"thin pool tp is 85.0% full of data (Degraded from 85%)"}},
		{name: "metadata", data: 3, meta: 97.25, want: lvmv1alpha1.VGStatusDegraded,
			reason: []string{"thin pool tp is 97.2% full of metadata"}},
		{name: "both", data: 99, meta: 90, want: lvmv1alpha1.VGStatusDegraded,
			reason: []string{"99.0% full of data", "90.0% full of metadata"}},
		{name: "drained", data: 40, meta: 20, want: lvmv1alpha1.VGStatusReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.fake.SetUsage("vg1", "tp", tc.data, tc.meta)
			n.fake.Reset()
			out := n.reconcile(t, in)
			if out.Status.Status != tc.want || len(n.modifications()) != 0 {
				t.Fatalf("status %+v, changes %q; want %s and no change", out.Status, n.modifications(), tc.want)
			}
			if tc.reason == nil && out.Status.Reason != "" {
				t.Errorf("reason %q, want none", out.Status.Reason)
			}
			for _, r := range tc.reason {
				if !strings.Contains(out.Status.Reason, r) {
					t.Errorf("reason %q does not say %q", out.Status.Reason, r)
				}
			}
			c := out.Status.Capacity
			if c == nil || c.ThinPool == nil || c.ThinPool.Name != "tp" || c.Size.Value() == 0 ||
				c.ThinPool.DataPercent != strconv.FormatFloat(tc.data, 'f', 1, 64) ||
				c.ThinPool.MetadataPercent != strconv.FormatFloat(tc.meta, 'f', 1, 64) {
				t.Errorf(
					"capacity %+v (pool %+v), want the pool's fill levels %.1f and %.1f",
					c,
					c.ThinPool,
					tc.data,
					tc.meta,
				)
			}
		})
	}

	thick := newNode([]string{"/dev/sdb"}, nil)
	tin := vgmanager.Input{Name: "vg2", Spec: lvmv1alpha1.LVMVolumeGroupSpec{}}
	thick.reconcile(t, tin)
	thick.fake.AddLV("vg2", "full", thick.fake.Free("vg2"))
	if out := thick.reconcile(t, tin); out.Status.Status != lvmv1alpha1.VGStatusReady || out.Status.Capacity == nil ||
		out.Status.Capacity.Free.Value() != 0 || out.Status.Capacity.ThinPool != nil {
		t.Errorf("a thick VG with no free extents: %+v, want Ready (a full VG refuses new volumes, it loses no data)",
			out.Status)
	}
}
