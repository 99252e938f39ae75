package envtest

import (
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// updateCases are the rows U1-U14: upstream's rules on updates, refused and allowed.
func updateCases() []compatCase {
	tp := func(f func(*lvmv1alpha1.ThinPoolConfig)) []clusterOpt { return []clusterOpt{thin(f)} }
	static := func(size string) func(*lvmv1alpha1.ThinPoolConfig) {
		return func(p *lvmv1alpha1.ThinPoolConfig) {
			p.MetadataSizeCalculationPolicy = lvmv1alpha1.MetadataSizeCalculationPolicyStatic
			p.MetadataSize = nil
			if size != "" {
				p.MetadataSize = qty(size)
			}
		}
	}
	twoClasses := []clusterOpt{withPaths("/dev/sdb"), withExtraClass(class("vg2", "", "/dev/sdc"))}
	mirror := []clusterOpt{
		thick(),
		withPaths("/dev/sdb", "/dev/sdc"),
		withRAID(lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1}),
	}
	return []compatCase{
		{
			rule:   "U1",
			name:   "additionalParameters set on an existing class",
			update: []clusterOpt{params("example.com/tier", "fast")},
			by:     byCRD,
			want: []string{
				"deviceClasses[0].storageClassOptions",
				"additionalParameters is immutable",
				"create a new device class",
			},
		},
		{rule: "U2", name: "all device classes removed", update: []clusterOpt{noClasses()},
			by: byCRD, want: []string{"spec.storage", "cannot become empty", "delete the LVMCluster"}},
		{rule: "U2", name: "no device classes stays empty", create: []clusterOpt{noClasses()},
			update: []clusterOpt{func(c *lvmv1alpha1.LVMCluster) { c.Spec.Tolerations = nil }}},
		{
			rule:   "U3",
			name:   "default device class removed",
			create: twoClasses,
			update: []clusterOpt{dropClass("vg1")},
			by:     byCRD,
			want: []string{
				"spec.storage.deviceClasses",
				"default device class cannot be removed",
				"set default on another device class",
			},
		},
		{
			rule:   "U3",
			name:   "default moved and old default removed at once",
			create: twoClasses,
			update: []clusterOpt{dropClass("vg1"),
				func(c *lvmv1alpha1.LVMCluster) { c.Spec.Storage.DeviceClasses[0].Default = true }},
			by:   byCRD,
			want: []string{"default device class cannot be removed"},
		},
		{
			rule:   "U3",
			name:   "non-default device class removed",
			create: twoClasses,
			update: []clusterOpt{dropClass("vg2")},
		},
		{
			rule:   "U3",
			name:   "device class added",
			create: []clusterOpt{withPaths("/dev/sdb")},
			update: []clusterOpt{withExtraClass(class("vg2", "", "/dev/sdc"))},
		},
		{rule: "U4", name: "thin pool removed", update: []clusterOpt{thick()},
			by: byCRD, want: []string{"deviceClasses[0].thinPoolConfig", "cannot be added or removed"}},
		{
			rule:   "U4",
			name:   "thin pool added",
			create: []clusterOpt{thick()},
			update: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) {
				d.ThinPoolConfig = &lvmv1alpha1.ThinPoolConfig{Name: "tp", OverprovisionRatio: 1}
			})},
			by:   byCRD,
			want: []string{"deviceClasses[0].thinPoolConfig", "cannot be added or removed"},
		},
		{rule: "U5", name: "thin pool renamed", update: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.Name = "other" }),
			by: byCRD, want: []string{"thinPoolConfig.name", "thinPoolConfig.name is immutable"}},
		{
			rule:   "U6",
			name:   "sizePercent changed",
			update: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.SizePercent = 50 }),
			by:     byCRD,
			want:   []string{"thinPoolConfig.sizePercent", "sizePercent is immutable"},
		},
		{
			rule:   "U6",
			name:   "overprovisionRatio changed",
			update: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.OverprovisionRatio = 20 }),
		},
		{rule: "U7", name: "chunkSizeCalculationPolicy changed", update: tp(func(p *lvmv1alpha1.ThinPoolConfig) {
			p.ChunkSizeCalculationPolicy = lvmv1alpha1.ChunkSizeCalculationPolicyHost
		}), by: byCRD, want: []string{"thinPoolConfig.chunkSizeCalculationPolicy", "is immutable"}},
		{
			rule:   "U8",
			name:   "chunkSize changed",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.ChunkSize = qty("128Ki") }),
			update: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.ChunkSize = qty("256Ki") }),
			by:     byCRD,
			want:   []string{"thinPoolConfig.chunkSize", "chunkSize is immutable"},
		},
		{
			rule:   "U8",
			name:   "chunkSize added",
			update: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.ChunkSize = qty("128Ki") }),
			by:     byCRD,
			want:   []string{"thinPoolConfig.chunkSize", "chunkSize is immutable"},
		},
		{rule: "U9", name: "metadataSize shrinks", create: tp(static("1Gi")), update: tp(static("512Mi")),
			by: byCRD, want: []string{"thinPoolConfig.metadataSize", "can only grow"}},
		{rule: "U9", name: "unset metadataSize (1Gi) shrinks", create: tp(static("")), update: tp(static("512Mi")),
			by: byCRD, want: []string{"thinPoolConfig.metadataSize", "can only grow"}},
		{rule: "U9", name: "metadataSize grows", create: tp(static("1Gi")), update: tp(static("2Gi"))},
		{rule: "U9", name: "policy Host to Static", update: tp(static("512Mi"))},
		{
			rule:   "U9",
			name:   "policy Static to Host",
			create: tp(static("2Gi")),
			update: tp(func(p *lvmv1alpha1.ThinPoolConfig) {
				p.MetadataSizeCalculationPolicy, p.MetadataSize = lvmv1alpha1.MetadataSizeCalculationPolicyHost, nil
			}),
		},
		{
			rule:   "U10",
			name:   "raidConfig removed",
			create: mirror,
			update: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.RAIDConfig = nil })},
			by:     byCRD,
			want:   []string{"deviceClasses[0].raidConfig", "cannot be added or removed"},
		},
		{rule: "U10", name: "raidConfig added", create: []clusterOpt{thick(), withPaths("/dev/sdb", "/dev/sdc")},
			update: []clusterOpt{withRAID(lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1})},
			by:     byCRD, want: []string{"deviceClasses[0].raidConfig", "cannot be added or removed"}},
		{
			rule:   "U11",
			name:   "nodeSelector changed",
			create: []clusterOpt{withNodeSelector("zone", "a")},
			update: []clusterOpt{withNodeSelector("zone", "b")},
			by:     byCRD,
			want:   []string{"deviceClasses[0].nodeSelector", "nodeSelector is immutable"},
		},
		{rule: "U11", name: "nodeSelector added", update: []clusterOpt{withNodeSelector("zone", "a")},
			by: byCRD, want: []string{"deviceClasses[0].nodeSelector", "nodeSelector is immutable"}},
		{rule: "U11", name: "nodeSelector removed", create: []clusterOpt{withNodeSelector("zone", "a")},
			update: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.NodeSelector = nil })},
			by:     byCRD, want: []string{"deviceClasses[0].nodeSelector", "nodeSelector is immutable"}},
		{
			rule:   "U12",
			name:   "forceWipe turned on",
			create: []clusterOpt{withPaths("/dev/sdb")},
			update: []clusterOpt{withForceWipe(true)},
			by:     byCRD,
			want:   []string{"deviceClasses[0].deviceSelector", "forceWipeDevicesAndDestroyAllData is immutable"},
		},
		{
			rule:   "U12",
			name:   "forceWipe turned off",
			create: []clusterOpt{withPaths("/dev/sdb"), withForceWipe(true)},
			update: []clusterOpt{withForceWipe(false)},
			by:     byCRD,
			want:   []string{"forceWipeDevicesAndDestroyAllData is immutable"},
		},
		{
			rule:   "U12",
			name:   "forceWipe false set explicitly",
			create: []clusterOpt{withPaths("/dev/sdb")},
			update: []clusterOpt{withForceWipe(false)},
			by:     byCRD,
			want:   []string{"forceWipeDevicesAndDestroyAllData is immutable", "restore its previous value"},
		},
		{
			rule:   "U12",
			name:   "forceWipe kept",
			create: []clusterOpt{withPaths("/dev/sdb"), withForceWipe(true)},
			update: []clusterOpt{withPaths("/dev/sdb", "/dev/sdc")},
		},
		{
			rule:   "U13",
			name:   "paths added to a class without them",
			update: []clusterOpt{withPaths("/dev/sdb")},
			by:     byCRD,
			want: []string{
				"deviceClasses[0].deviceSelector",
				"paths cannot be added to a device class created without them",
			},
		},
		{
			rule:   "U13",
			name:   "paths grow",
			create: []clusterOpt{withPaths("/dev/sdb")},
			update: []clusterOpt{withPaths("/dev/sdb", "/dev/sdc"), withOptionalPaths("/dev/sdd")},
		},
		{rule: "U14", name: "all paths removed", create: []clusterOpt{withPaths("/dev/sdb")},
			update: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.DeviceSelector = nil })},
			by:     byCRD, want: []string{"deviceClasses[0].deviceSelector", "cannot lose all its paths"}},
		{
			rule:   "U14",
			name:   "paths shrink",
			create: []clusterOpt{withPaths("/dev/sdb", "/dev/sdc")},
			update: []clusterOpt{withPaths("/dev/sdc")},
		},
	}
}
