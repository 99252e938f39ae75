package envtest

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// webhookRuleCases are the rows W1-W15 (upstream's webhook checks on create and update: namespace,
// one LVMCluster, defaults, RAID, device selectors).
func webhookRuleCases() []compatCase {
	raid := func(r lvmv1alpha1.RAIDConfig, paths ...string) []clusterOpt {
		return []clusterOpt{thick(), withPaths(paths...), withRAID(r)}
	}
	r1, r5, r10 := lvmv1alpha1.RAIDType1, lvmv1alpha1.RAIDType5, lvmv1alpha1.RAIDType10
	two := func(a, b lvmv1alpha1.DeviceClass) []clusterOpt {
		return []clusterOpt{func(c *lvmv1alpha1.LVMCluster) {
			a.Default = true
			c.Spec.Storage.DeviceClasses = []lvmv1alpha1.DeviceClass{a, b}
		}}
	}
	return []compatCase{
		{
			rule:   "W1",
			name:   "outside the operator namespace",
			create: []clusterOpt{func(c *lvmv1alpha1.LVMCluster) { c.Namespace = "default" }},
			by:     byWebhook,
			want:   []string{"metadata.namespace", `create it in the operator namespace "lvms-system"`},
		},
		{rule: "W2", name: "a second LVMCluster", setup: existingCluster, by: byWebhook,
			want: []string{"only one LVMCluster is supported", "add device classes to it instead"}},
		{
			rule: "W3",
			name: "two default device classes",
			create: two(class("vg1", "", "/dev/sdb"), lvmv1alpha1.DeviceClass{
				Name:           "vg2",
				Default:        true,
				DeviceSelector: &lvmv1alpha1.DeviceSelector{Paths: devicePaths("/dev/sdc")},
			}),
			by:   byCRD,
			want: []string{"spec.storage.deviceClasses", "at most one device class can be default"},
		},
		{
			rule:   "W4",
			name:   "raidConfig with thinPoolConfig",
			create: []clusterOpt{withPaths("/dev/sdb", "/dev/sdc"), withRAID(lvmv1alpha1.RAIDConfig{Type: r1})},
			by:     byCRD,
			want:   []string{"deviceClasses[0].raidConfig", "cannot be combined with thinPoolConfig"},
		},
		{
			rule: "W5",
			name: "raid5 with mirrors",
			create: raid(
				lvmv1alpha1.RAIDConfig{Type: r5, Mirrors: ptr.To[int32](1)},
				"/dev/sdb",
				"/dev/sdc",
				"/dev/sdd",
			),
			by:   byCRD,
			want: []string{"raidConfig.mirrors", "applies only to raid1 and raid10"},
		},
		{
			rule:   "W6",
			name:   "raid1 with stripes",
			create: raid(lvmv1alpha1.RAIDConfig{Type: r1, Stripes: ptr.To[int32](2)}, "/dev/sdb", "/dev/sdc"),
			by:     byCRD,
			want:   []string{"raidConfig.stripes", "does not apply to raid1"},
		},
		{
			rule:   "W7",
			name:   "raid1 with stripeSize",
			create: raid(lvmv1alpha1.RAIDConfig{Type: r1, StripeSize: qty("64Ki")}, "/dev/sdb", "/dev/sdc"),
			by:     byCRD,
			want:   []string{"raidConfig.stripeSize", "does not apply to raid1"},
		},
		{
			rule:   "W8",
			name:   "stripeSize not a power of two",
			create: raid(lvmv1alpha1.RAIDConfig{Type: r5, StripeSize: qty("96Ki")}, "/dev/sdb", "/dev/sdc", "/dev/sdd"),
			by:     byCRD,
			want:   []string{"raidConfig.stripeSize", "must be a power of two"},
		},
		{
			rule:   "W9",
			name:   "RAID without disks",
			create: []clusterOpt{thick(), withRAID(lvmv1alpha1.RAIDConfig{Type: r1})},
			by:     byCRD,
			want: []string{
				"deviceClasses[0].raidConfig",
				"needs explicit disks",
				"deviceSelector.paths or deviceSelector.optionalPaths",
			},
		},
		{
			rule: "W9",
			name: "RAID on optionalPaths only",
			create: []clusterOpt{
				thick(),
				withOptionalPaths("/dev/sdb", "/dev/sdc"),
				withRAID(lvmv1alpha1.RAIDConfig{Type: r1}),
			},
		},
		{
			rule:   "W10",
			name:   "raid5 on two disks",
			create: raid(lvmv1alpha1.RAIDConfig{Type: r5}, "/dev/sdb", "/dev/sdc"),
			by:     byCRD,
			want:   []string{"deviceClasses[0].raidConfig", "needs more disks", "raid4 and raid5 stripes+1"},
		},
		{
			rule:   "W10",
			name:   "raid1 with mirrors 2 on two disks",
			create: raid(lvmv1alpha1.RAIDConfig{Type: r1, Mirrors: ptr.To[int32](2)}, "/dev/sdb", "/dev/sdc"),
			by:     byCRD,
			want:   []string{"deviceClasses[0].raidConfig", "needs more disks"},
		},
		{
			rule: "W10",
			name: "optionalPaths count towards the RAID minimum",
			create: []clusterOpt{thick(), withPaths("/dev/sdb", "/dev/sdc"),
				withOptionalPaths("/dev/sdd"), withRAID(lvmv1alpha1.RAIDConfig{Type: r5})},
		},
		{
			rule:   "W11",
			name:   "raid10 on five disks",
			create: raid(lvmv1alpha1.RAIDConfig{Type: r10}, "/dev/sdb", "/dev/sdc", "/dev/sdd", "/dev/sde", "/dev/sdf"),
			by:     byCRD,
			want:   []string{"deviceClasses[0].raidConfig", "multiple of mirrors+1"},
		},
		{
			rule: "W11",
			name: "raid10 on four disks",
			create: raid(
				lvmv1alpha1.RAIDConfig{Type: r10, StripeSize: qty("64Ki")},
				"/dev/sdb",
				"/dev/sdc",
				"/dev/sdd",
				"/dev/sde",
			),
		},
		{
			rule:   "W12",
			name:   "deviceSelector without disks",
			create: []clusterOpt{withForceWipe(true)},
			by:     byCRD,
			want:   []string{"deviceClasses[0].deviceSelector", "needs at least one disk in paths or optionalPaths"},
		},
		{
			rule:   "W13",
			name:   "second device class without deviceSelector",
			create: []clusterOpt{withPaths("/dev/sdb"), withExtraClass(class("vg2", ""))},
			by:     byCRD,
			want:   []string{"spec.storage.deviceClasses", "each one needs a deviceSelector"},
		},
		{
			rule:   "W13",
			name:   "two device classes with their disks",
			create: []clusterOpt{withPaths("/dev/sdb"), withExtraClass(class("vg2", "", "/dev/sdc"))},
		},
		{rule: "W14", name: "path outside dev", create: []clusterOpt{withPaths("sdb")},
			by: byCRD, want: []string{"deviceSelector.paths[0]", "should match '^/dev/'"}},
		{rule: "W14", name: "optional path outside dev", create: []clusterOpt{withOptionalPaths("/tmp/disk")},
			by: byCRD, want: []string{"deviceSelector.optionalPaths[0]", "should match '^/dev/'"}},
		{
			rule:   "W15",
			name:   "same disk in two classes on all nodes",
			create: two(class("vg1", "", "/dev/sdb"), class("vg2", "", "/dev/sdc", "/dev/sdb")),
			by:     byCRD,
			want: []string{
				"spec.storage.deviceClasses",
				"listed by two device classes with the same nodeSelector",
				"list it in one device class only",
			},
		},
		{
			rule:   "W15",
			name:   "same disk in two classes with the same nodeSelector",
			create: two(class("vg1", "a", "/dev/sdb"), class("vg2", "a", "/dev/sdb")),
			by:     byCRD,
			want:   []string{"spec.storage.deviceClasses", "same nodeSelector"},
		},
		{
			rule:   "W15",
			name:   "same disk in two classes with different nodeSelectors",
			create: two(class("vg1", "a", "/dev/sdb"), class("vg2", "b", "/dev/sdb")),
		},
		{rule: "W15", name: "path listed twice", create: []clusterOpt{withPaths("/dev/sdb", "/dev/sdb")},
			by: byCRD, want: []string{"deviceSelector.paths[1]", `Duplicate value: "/dev/sdb"`}},
		{
			rule:   "W15",
			name:   "path in paths and optionalPaths",
			create: []clusterOpt{withPaths("/dev/sdb"), withOptionalPaths("/dev/sdb")},
			by:     byCRD,
			want:   []string{"deviceClasses[0].deviceSelector", "listed in both paths and optionalPaths"},
		},
	}
}

// thinAndLabelCases are the rows W17-W25 (upstream's webhook checks of thin pool sizes and
// StorageClass options) and A1-A7 (admission warnings).
func thinAndLabelCases() []compatCase {
	tp := func(f func(*lvmv1alpha1.ThinPoolConfig)) []clusterOpt { return []clusterOpt{thin(f)} }
	static := func(size string) func(*lvmv1alpha1.ThinPoolConfig) {
		return func(p *lvmv1alpha1.ThinPoolConfig) {
			p.MetadataSize = qty(size)
			p.MetadataSizeCalculationPolicy = lvmv1alpha1.MetadataSizeCalculationPolicyStatic
		}
	}
	return []compatCase{
		{rule: "W17", name: "chunkSize with Host policy", create: tp(func(p *lvmv1alpha1.ThinPoolConfig) {
			p.ChunkSize = qty("128Ki")
			p.ChunkSizeCalculationPolicy = lvmv1alpha1.ChunkSizeCalculationPolicyHost
		}), by: byCRD, want: []string{"thinPoolConfig.chunkSize", "only used with chunkSizeCalculationPolicy Static"}},
		{
			rule:   "W18",
			name:   "chunkSize below 64Ki",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.ChunkSize = qty("32Ki") }),
			by:     byCRD,
			want:   []string{"thinPoolConfig.chunkSize", "must be between 64Ki and 1Gi"},
		},
		{
			rule:   "W18",
			name:   "chunkSize above 1Gi",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.ChunkSize = qty("2Gi") }),
			by:     byCRD,
			want:   []string{"thinPoolConfig.chunkSize", "must be between 64Ki and 1Gi"},
		},
		{
			rule:   "W18",
			name:   "chunkSize 256Ki",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.ChunkSize = qty("256Ki") }),
		},
		{
			rule:   "W19",
			name:   "metadataSize with Host policy",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.MetadataSize = qty("1Gi") }),
			by:     byCRD,
			want:   []string{"thinPoolConfig.metadataSize", "only used with metadataSizeCalculationPolicy Static"},
		},
		{rule: "W20", name: "metadataSize below 2Mi", create: tp(static("1Mi")),
			by: byCRD, want: []string{"thinPoolConfig.metadataSize", "must be between 2Mi and 16Gi"}},
		{rule: "W20", name: "metadataSize above 16Gi", create: tp(static("17Gi")),
			by: byCRD, want: []string{"thinPoolConfig.metadataSize", "must be between 2Mi and 16Gi"}},
		{rule: "W20", name: "metadataSize 1Gi", create: tp(static("1Gi"))},
		{rule: "W21", name: "empty StorageClass parameter key", create: []clusterOpt{params("", "x")},
			by: byCRD, want: []string{"storageClassOptions.additionalParameters", "may not have an empty key"}},
		{
			rule:   "W22",
			name:   "StorageClass parameter topolvm.io device-class",
			create: []clusterOpt{params("topolvm.io/device-class", "other")},
			by:     byCRD,
			want: []string{
				"storageClassOptions.additionalParameters",
				"may not set topolvm.io/device-class or csi.storage.k8s.io/fstype",
			},
		},
		{
			rule:   "W22",
			name:   "StorageClass parameter csi.storage.k8s.io fstype",
			create: []clusterOpt{params("csi.storage.k8s.io/fstype", "ext4")},
			by:     byCRD,
			want:   []string{"storageClassOptions.additionalParameters", "the operator sets them"},
		},
		{
			rule:   "W22",
			name:   "other csi.storage.k8s.io parameters",
			create: []clusterOpt{params("csi.storage.k8s.io/node-stage-secret-name", "s", "example.com/tier", "fast")},
		},
		{rule: "W23", name: "label key not a label key", create: []clusterOpt{labels("bad key!", "v")},
			by: byCRD, want: []string{"storageClassOptions.additionalLabels", "keys must be label keys"}},
		{
			rule:   "W23",
			name:   "label key with a 64-character name",
			create: []clusterOpt{labels("example.com/"+long(64), "v")},
			by:     byCRD,
			want:   []string{"storageClassOptions.additionalLabels", "keys must be label keys"},
		},
		{
			rule:   "W24",
			name:   "label value not a label value",
			create: []clusterOpt{labels("team", "not valid!")},
			by:     byWebhook,
			want:   []string{"storageClassOptions.additionalLabels[team]", "is not a label value", "at most 63"},
		},
		{
			rule:   "W25",
			name:   "label app.kubernetes.io managed-by",
			create: []clusterOpt{labels("app.kubernetes.io/managed-by", "me")},
			by:     byCRD,
			want:   []string{"storageClassOptions.additionalLabels", "may not set a key the operator sets itself"},
		},
		{
			rule:   "W25",
			name:   "label under owned-by.topolvm.io",
			create: []clusterOpt{labels("owned-by.topolvm.io/name", "x")},
			by:     byCRD,
			want:   []string{"storageClassOptions.additionalLabels", "may not set a key the operator sets itself"},
		},
		{
			rule:   "W25",
			name:   "labels app.kubernetes.io instance and version",
			create: []clusterOpt{labels("app.kubernetes.io/instance", "lvms", "app.kubernetes.io/version", "4.18")},
		},
		{
			rule:   "A1",
			name:   "sizePercent above 90 warns",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.SizePercent = 95 }),
			warn:   []string{"thinPoolConfig.sizePercent 95 is above 90%"},
		},
		{
			rule:   "A2",
			name:   "no default device class warns",
			create: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.Default = false })},
			warn:   []string{"no device class is default"},
		},
		{
			rule: "A3",
			name: "single device class without paths warns",
			warn: []string{"device class vg1: no deviceSelector.paths"},
		},
		{
			rule: "A4",
			name: "Static metadata policy without a size warns",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) {
				p.MetadataSizeCalculationPolicy = lvmv1alpha1.MetadataSizeCalculationPolicyStatic
			}),
			warn: []string{"metadataSize is unset"},
		},
		{
			rule: "A5",
			name: "Dynamic discovery without paths warns",
			create: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) {
				d.DeviceDiscoveryPolicy = lvmv1alpha1.DeviceDiscoveryPolicyDynamic
			})},
			warn: []string{"deviceDiscoveryPolicy is Dynamic without deviceSelector paths"},
		},
		{
			rule:   "A6",
			name:   "path no node reported warns",
			setup:  nodeReport,
			create: []clusterOpt{withPaths("/dev/sdb", "/dev/nvme9n1")},
			warn:   []string{"device class vg1: /dev/nvme9n1 exists on no node"},
		},
		{
			rule:   "A7",
			name:   "forceWipe with optionalPaths only warns",
			create: []clusterOpt{withOptionalPaths("/dev/sdb"), withForceWipe(true)},
			warn:   []string{"only wipes disks listed in deviceSelector.paths"},
		},
	}
}

func long(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}

// existingCluster creates another LVMCluster for the case.
func existingCluster(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c := sampleCluster(t)
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatalf("create the first LVMCluster: %v", err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, c) })
}

// nodeReport creates the disk report of one node that has /dev/sdb.
func nodeReport(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	r := &lvmv1alpha1.LVMVolumeGroupNodeStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: uniqueName("node")},
		Spec: lvmv1alpha1.LVMVolumeGroupNodeStatusSpec{LiveNodeStatus: []lvmv1alpha1.VGStatus{{
			Name: "vg1", Status: lvmv1alpha1.VGStatusReady, Devices: []string{"/dev/sdb"},
		}}},
	}
	if err := k8s.Create(ctx, r); err != nil {
		t.Fatalf("create node report: %v", err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, r) })
}
