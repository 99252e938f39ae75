package envtest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// extraCases are the rows D1-D10: where we differ from upstream, each with its reason in
// docs/api-compat.md.
func extraCases() []compatCase {
	tp := func(f func(*lvmv1alpha1.ThinPoolConfig)) []clusterOpt { return []clusterOpt{thin(f)} }
	thinName := func(n string) []clusterOpt { return tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.Name = n }) }
	raid := func(r lvmv1alpha1.RAIDConfig, paths ...string) []clusterOpt {
		return []clusterOpt{thick(), withPaths(paths...), withRAID(r)}
	}
	two := func(a, b lvmv1alpha1.DeviceClass) []clusterOpt {
		return []clusterOpt{func(c *lvmv1alpha1.LVMCluster) {
			a.Default = true
			c.Spec.Storage.DeviceClasses = []lvmv1alpha1.DeviceClass{a, b}
		}}
	}
	sixteen := func(c *lvmv1alpha1.LVMCluster) {
		c.Spec.Storage.DeviceClasses[0].DeviceSelector = &lvmv1alpha1.DeviceSelector{Paths: devicePaths("/dev/sda")}
		for i := 1; i < 16; i++ {
			c.Spec.Storage.DeviceClasses = append(
				c.Spec.Storage.DeviceClasses,
				class("vg"+long(1)+string(rune('a'+i)), "", "/dev/sd"+string(rune('a'+i))),
			)
		}
	}
	return []compatCase{
		{
			rule:   "D1",
			name:   "device class name of 63 characters",
			create: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.Name = long(63) })},
		},
		{
			rule:   "D1",
			name:   "device class name of 64 characters",
			create: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.Name = long(64) })},
			by:     byCRD,
			want:   []string{"deviceClasses[0].name", "may not be more than 63"},
		},
		{rule: "D2", name: "thin pool name with underscore", create: thinName("thin_pool_0")},
		{rule: "D2", name: "thin pool name with + . and upper case", create: thinName("Thin.pool+1")},
		{rule: "D2", name: "thin pool name starting with -", create: thinName("-pool"),
			by: byCRD, want: []string{"thinPoolConfig.name", "should match"}},
		{rule: "D2", name: "thin pool name with a space", create: thinName("thin pool"),
			by: byCRD, want: []string{"thinPoolConfig.name", "should match"}},
		{rule: "D2", name: "thin pool name reserved by lvm2", create: thinName("pool_tmeta"),
			by: byCRD, want: []string{"thinPoolConfig.name", "reserved by lvm2", "choose another name"}},
		{rule: "D2", name: "thin pool name starting with snapshot", create: thinName("snapshot0"),
			by: byCRD, want: []string{"thinPoolConfig.name", "reserved by lvm2"}},
		{rule: "D3", name: "16 device classes", create: []clusterOpt{sixteen}},
		{
			rule:   "D3",
			name:   "17 device classes",
			create: []clusterOpt{sixteen, withExtraClass(class("vg17", "", "/dev/sdz"))},
			by:     byCRD,
			want:   []string{"spec.storage.deviceClasses", "must have at most 16 items"},
		},
		{
			rule:   "D3",
			name:   "path longer than 256 characters",
			create: []clusterOpt{withPaths("/dev/disk/by-id/" + long(250))},
			by:     byCRD,
			want:   []string{"deviceSelector.paths[0]", "may not be more than 256"},
		},
		{
			rule:   "D4",
			name:   "chunkSize not a multiple of 64Ki",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.ChunkSize = qty("96Ki") }),
			by:     byCRD,
			want:   []string{"thinPoolConfig.chunkSize", "multiple of 64Ki"},
		},
		{
			rule: "D5",
			name: "raid6 with 2 stripes",
			create: raid(
				lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType6, Stripes: ptr.To[int32](2)},
				"/dev/sdb",
				"/dev/sdc",
				"/dev/sdd",
				"/dev/sde",
			),
			by:   byCRD,
			want: []string{"raidConfig.stripes", "at least 3 for raid6"},
		},
		{
			rule: "D5",
			name: "raid6 on five disks",
			create: raid(
				lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType6},
				"/dev/sdb",
				"/dev/sdc",
				"/dev/sdd",
				"/dev/sde",
				"/dev/sdf",
			),
		},
		{
			rule: "D6",
			name: "raid10 with 3 stripes on four disks",
			create: raid(
				lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType10, Stripes: ptr.To[int32](3)},
				"/dev/sdb",
				"/dev/sdc",
				"/dev/sdd",
				"/dev/sde",
			),
			by:   byCRD,
			want: []string{"raidConfig", "needs more disks", "raid10 stripes*(mirrors+1)"},
		},
		{
			rule: "D7",
			name: "stripeSize 2Ki",
			create: raid(
				lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType5, StripeSize: qty("2Ki")},
				"/dev/sdb",
				"/dev/sdc",
				"/dev/sdd",
			),
			by:   byCRD,
			want: []string{"raidConfig.stripeSize", "power of two of at least 4Ki"},
		},
		{
			rule:   "D8",
			name:   "label lvm.topolvm.io device-class",
			create: []clusterOpt{labels("lvm.topolvm.io/device-class", "x")},
			by:     byCRD,
			want:   []string{"storageClassOptions.additionalLabels", "may not set a key the operator sets itself"},
		},
		{rule: "D8", name: "other lvm.topolvm.io labels", create: []clusterOpt{labels("lvm.topolvm.io/tier", "gold")}},
		{
			rule:   "D9",
			name:   "same disk in classes selecting the same existing node",
			setup:  zoneNodes,
			create: two(class("vg1", "a", "/dev/sdb"), class("vg2", "", "/dev/sdc", "/dev/sdb")),
			by:     byWebhook,
			want: []string{
				"spec.storage.deviceClasses",
				"vg1 and vg2 both list /dev/sdb and both select node",
				"list it in one of them only",
			},
		},
		{rule: "D9", name: "same disk in classes on disjoint nodes", setup: zoneNodes,
			create: two(class("vg1", "a", "/dev/sdb"), class("vg2", "b", "/dev/sdb"))},
		{rule: "D10", name: "metadataSize grown beyond 16Gi", create: tp(func(p *lvmv1alpha1.ThinPoolConfig) {
			p.MetadataSizeCalculationPolicy, p.MetadataSize = lvmv1alpha1.MetadataSizeCalculationPolicyStatic, qty(
				"1Gi",
			)
		}), update: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.MetadataSize = qty("17Gi") }),
			by: byCRD, want: []string{"thinPoolConfig.metadataSize", "must be between 2Mi and 16Gi"}},
	}
}

// zoneNodes creates nodes in zones a and b.
func zoneNodes(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, zone := range []string{"a", "b"} {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: uniqueName("node-" + zone), Labels: map[string]string{"zone": zone}},
		}
		if err := k8s.Create(ctx, n); err != nil {
			t.Fatalf("create node: %v", err)
		}
		t.Cleanup(func() { _ = k8s.Delete(ctx, n) })
	}
}

// extensionCases are the rows E1-E2: fields of ours that upstream does not have.
func extensionCases() []compatCase {
	transfer := func(t lvmv1alpha1.TransferSpec) []clusterOpt {
		return []clusterOpt{func(c *lvmv1alpha1.LVMCluster) { c.Spec.Transfer = &t }}
	}
	bandwidth := func(q string) []clusterOpt {
		return transfer(lvmv1alpha1.TransferSpec{Bandwidth: new(resource.MustParse(q))})
	}
	auto := func(size int32, ae lvmv1alpha1.ThinPoolAutoExtend) []clusterOpt {
		return []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.SizePercent, p.AutoExtend = size, &ae })}
	}
	return []compatCase{
		{rule: "E3", name: "autoExtend with its defaults", create: auto(50, lvmv1alpha1.ThinPoolAutoExtend{})},
		{rule: "E3", name: "autoExtend up to sizePercent", create: auto(60,
			lvmv1alpha1.ThinPoolAutoExtend{ThresholdPercent: 95, Percent: 5, MaxSizePercent: 60})},
		{rule: "E3", name: "autoExtend threshold 40", create: auto(50,
			lvmv1alpha1.ThinPoolAutoExtend{ThresholdPercent: 40}),
			by: byCRD, want: []string{"autoExtend.thresholdPercent", "greater than or equal to 50"}},
		{rule: "E3", name: "autoExtend below sizePercent", create: auto(90,
			lvmv1alpha1.ThinPoolAutoExtend{MaxSizePercent: 80}),
			by: byCRD, want: []string{"autoExtend.maxSizePercent", "below sizePercent"}},
		{rule: "E1", name: "crossNode Enabled", create: transfer(lvmv1alpha1.TransferSpec{CrossNode: "Enabled"})},
		{rule: "E1", name: "crossNode unknown", create: transfer(lvmv1alpha1.TransferSpec{CrossNode: "Always"}),
			by: byCRD, want: []string{"spec.transfer.crossNode", `Unsupported value: "Always"`}},
		{rule: "E2", name: "bandwidth 100Mi", create: bandwidth("100Mi")},
		{rule: "E2", name: "bandwidth 0", create: bandwidth("0")},
		{rule: "E2", name: "bandwidth negative", create: bandwidth("-1Mi"),
			by: byCRD, want: []string{"spec.transfer.bandwidth", "non-negative quantity"}},
	}
}
