package envtest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// TestSampleAcceptedAndDefaulted: the upstream-style sample is accepted and the schema fills in the
// documented defaults.
func TestSampleAcceptedAndDefaulted(t *testing.T) {
	ctx := context.Background()
	for _, sample := range []string{"sample", "minimal"} {
		t.Run(sample, func(t *testing.T) {
			c := sampleCluster(t)
			if sample == "minimal" {
				c.Spec.Storage.DeviceClasses[0].FilesystemType = ""
				c.Spec.Storage.DeviceClasses[0].ThinPoolConfig.SizePercent = 0
			}
			if err := k8s.Create(ctx, c); err != nil {
				t.Fatalf("create: %v", err)
			}
			t.Cleanup(func() { _ = k8s.Delete(ctx, c) })
			var got lvmv1alpha1.LVMCluster
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &got); err != nil {
				t.Fatalf("get: %v", err)
			}
			dc := got.Spec.Storage.DeviceClasses[0]
			checks := []struct {
				field     string
				got, want any
			}{
				{"fstype", dc.FilesystemType, lvmv1alpha1.FilesystemTypeXFS},
				{"sizePercent", dc.ThinPoolConfig.SizePercent, int32(90)},
				{"overprovisionRatio", dc.ThinPoolConfig.OverprovisionRatio, int32(10)},
				{"chunkSizeCalculationPolicy", dc.ThinPoolConfig.ChunkSizeCalculationPolicy,
					lvmv1alpha1.ChunkSizeCalculationPolicyStatic},
				{"metadataSizeCalculationPolicy", dc.ThinPoolConfig.MetadataSizeCalculationPolicy,
					lvmv1alpha1.MetadataSizeCalculationPolicyHost},
				{"deviceDiscoveryPolicy", dc.DeviceDiscoveryPolicy, lvmv1alpha1.DeviceDiscoveryPolicyDynamic},
				{"default", dc.Default, true},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
				}
			}
		})
	}
}

// TestInvalidSpecsRejected: every spec the schema can tell is wrong is refused at create time with
// a message that names the field and says what to change.
func TestInvalidSpecsRejected(t *testing.T) {
	second := func(name string, paths ...string) lvmv1alpha1.DeviceClass {
		d := lvmv1alpha1.DeviceClass{Name: name}
		if len(paths) > 0 {
			d.DeviceSelector = &lvmv1alpha1.DeviceSelector{Paths: devicePaths(paths...)}
		}
		return d
	}
	tests := []struct {
		name string
		opts []clusterOpt
		want []string
	}{
		{"device class name not a DNS label", []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.Name = "VG_1" })},
			[]string{"deviceClasses[0].name", "should match"}},
		{"sizePercent below 10", []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.SizePercent = 5 })},
			[]string{"thinPoolConfig.sizePercent", "greater than or equal to 10"}},
		{"sizePercent above 100", []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.SizePercent = 101 })},
			[]string{"thinPoolConfig.sizePercent", "less than or equal to 100"}},
		{"overprovisionRatio 0", []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.OverprovisionRatio = 0 })},
			[]string{"thinPoolConfig.overprovisionRatio", "greater than or equal to 1"}},
		{"chunkSize below 64Ki", []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.ChunkSize = qty("32Ki") })},
			[]string{"thinPoolConfig.chunkSize", "must be between 64Ki and 1Gi"}},
		{"chunkSize above 1Gi", []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.ChunkSize = qty("2Gi") })},
			[]string{"thinPoolConfig.chunkSize", "must be between 64Ki and 1Gi"}},
		{"chunkSize not a multiple of 64Ki", []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.ChunkSize = qty("96Ki") })},
			[]string{"thinPoolConfig.chunkSize", "multiple of 64Ki"}},
		{"chunkSize with Host policy", []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) {
			p.ChunkSize = qty("128Ki")
			p.ChunkSizeCalculationPolicy = lvmv1alpha1.ChunkSizeCalculationPolicyHost
		})}, []string{"thinPoolConfig", "chunkSize is only used with chunkSizeCalculationPolicy Static"}},
		{"metadataSize below 2Mi", []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) {
			p.MetadataSize = qty("1Mi")
			p.MetadataSizeCalculationPolicy = lvmv1alpha1.MetadataSizeCalculationPolicyStatic
		})}, []string{"thinPoolConfig.metadataSize", "must be between 2Mi and 16Gi"}},
		{"metadataSize above 16Gi", []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) {
			p.MetadataSize = qty("17Gi")
			p.MetadataSizeCalculationPolicy = lvmv1alpha1.MetadataSizeCalculationPolicyStatic
		})}, []string{"thinPoolConfig.metadataSize", "must be between 2Mi and 16Gi"}},
		{"metadataSize with Host policy", []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.MetadataSize = qty("1Gi") })},
			[]string{"thinPoolConfig", "metadataSize is only used with metadataSizeCalculationPolicy Static"}},
		{"unknown fstype", []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.FilesystemType = "btrfs" })},
			[]string{"deviceClasses[0].fstype", `Unsupported value: "btrfs"`}},
		{"path outside /dev", []clusterOpt{withPaths("sdb")},
			[]string{"deviceSelector.paths[0]", "should match '^/dev/"}},
		{"optional path outside /dev", []clusterOpt{withOptionalPaths("/tmp/disk")},
			[]string{"deviceSelector.optionalPaths[0]", "should match '^/dev/"}},
		{"path listed twice", []clusterOpt{withPaths("/dev/sdb", "/dev/sdb")},
			[]string{"deviceSelector.paths[1]", `Duplicate value: "/dev/sdb"`}},
		{"path in paths and optionalPaths", []clusterOpt{withPaths("/dev/sdb"), withOptionalPaths("/dev/sdb")},
			[]string{"deviceSelector", "listed in both paths and optionalPaths"}},
		{"path in two device classes", []clusterOpt{withPaths("/dev/sdb"), withExtraClass(second("vg2", "/dev/sdc", "/dev/sdb"))},
			[]string{"spec.storage.deviceClasses", "more than one device class"}},
		{"two default device classes", []clusterOpt{withExtraClass(lvmv1alpha1.DeviceClass{Name: "vg2", Default: true})},
			[]string{"spec.storage.deviceClasses", "at most one device class can be default"}},
		{"device class name twice", []clusterOpt{withExtraClass(second("vg1"))},
			[]string{"spec.storage.deviceClasses[1]", "Duplicate value"}},
		{"no device classes", []clusterOpt{func(c *lvmv1alpha1.LVMCluster) { c.Spec.Storage.DeviceClasses = nil }},
			[]string{"spec.storage.deviceClasses", "Required value"}},
		{"raidConfig with thinPoolConfig", []clusterOpt{withPaths("/dev/sdb", "/dev/sdc"), withRAID(lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1})},
			[]string{"deviceClasses[0]", "raidConfig cannot be combined with thinPoolConfig"}},
		{"raidConfig without paths", []clusterOpt{thick(), withRAID(lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1})},
			[]string{"deviceClasses[0]", "raidConfig needs explicit disks: list them in deviceSelector.paths"}},
		{"raid5 on two disks", []clusterOpt{thick(), withPaths("/dev/sdb", "/dev/sdc"), withRAID(lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType5})},
			[]string{"deviceClasses[0]", "raidConfig needs more disks than deviceSelector.paths lists"}},
		{"raid1 with stripes", []clusterOpt{thick(), withPaths("/dev/sdb", "/dev/sdc"), withRAID(lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1, Stripes: ptr.To[int32](2)})},
			[]string{"raidConfig", "stripes does not apply to raid1"}},
		{"raid5 with mirrors", []clusterOpt{thick(), withPaths("/dev/sdb", "/dev/sdc", "/dev/sdd"), withRAID(lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType5, Mirrors: ptr.To[int32](1)})},
			[]string{"raidConfig", "mirrors applies only to raid1 and raid10"}},
		{"raid6 with 2 stripes", []clusterOpt{thick(), withPaths("/dev/sdb", "/dev/sdc", "/dev/sdd", "/dev/sde"), withRAID(lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType6, Stripes: ptr.To[int32](2)})},
			[]string{"raidConfig", "raid6 at least 3"}},
		{"unknown RAID level", []clusterOpt{thick(), withPaths("/dev/sdb", "/dev/sdc"), withRAID(lvmv1alpha1.RAIDConfig{Type: "raid0"})},
			[]string{"raidConfig.type", `Unsupported value: "raid0"`}},
		{"reserved StorageClass parameter", []clusterOpt{withSCOptions(lvmv1alpha1.StorageClassOptions{AdditionalParameters: map[string]string{"topolvm.io/device-class": "other"}})},
			[]string{"storageClassOptions.additionalParameters", "reserved keys"}},
		{"reserved StorageClass label", []clusterOpt{withSCOptions(lvmv1alpha1.StorageClassOptions{AdditionalLabels: map[string]string{"app.kubernetes.io/managed-by": "me"}})},
			[]string{"storageClassOptions.additionalLabels", "reserved keys"}},
		{"unknown reclaimPolicy", []clusterOpt{withSCOptions(lvmv1alpha1.StorageClassOptions{ReclaimPolicy: reclaim("Recycle")})},
			[]string{"storageClassOptions.reclaimPolicy", `Unsupported value: "Recycle"`}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, tt.opts...)
			err := k8s.Create(ctx, c)
			if err == nil {
				t.Cleanup(func() { _ = k8s.Delete(ctx, c) })
			}
			assertRejected(t, err, tt.want...)
		})
	}
}

// TestValidVariantsAccepted guards against rules that reject good specs.
func TestValidVariantsAccepted(t *testing.T) {
	tests := []struct {
		name string
		opts []clusterOpt
	}{
		{"explicit paths and optional paths", []clusterOpt{withPaths("/dev/sdb", "/dev/disk/by-id/wwn-0x5000c500a0b1c2d3"), withOptionalPaths("/dev/sdc")}},
		{"static chunk and metadata sizes", []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) {
			p.ChunkSize = qty("256Ki")
			p.MetadataSize = qty("1Gi")
			p.MetadataSizeCalculationPolicy = lvmv1alpha1.MetadataSizeCalculationPolicyStatic
		})}},
		{"thick raid10", []clusterOpt{thick(), withPaths("/dev/sdb", "/dev/sdc", "/dev/sdd", "/dev/sde"), withRAID(lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType10, StripeSize: qty("64Ki")})}},
		{"thick raid6", []clusterOpt{thick(), withPaths("/dev/sdb", "/dev/sdc", "/dev/sdd", "/dev/sde", "/dev/sdf"), withRAID(lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType6})}},
		{"two classes on distinct disks", []clusterOpt{withPaths("/dev/sdb"), withExtraClass(lvmv1alpha1.DeviceClass{Name: "vg2", DeviceSelector: &lvmv1alpha1.DeviceSelector{Paths: devicePaths("/dev/sdc")}})}},
		{"storage class options", []clusterOpt{withSCOptions(lvmv1alpha1.StorageClassOptions{
			ReclaimPolicy: reclaim(corev1.PersistentVolumeReclaimRetain), VolumeBindingMode: binding(storagev1.VolumeBindingImmediate),
			AdditionalParameters: map[string]string{"example.com/tier": "fast"}, AdditionalLabels: map[string]string{"team": "storage"},
		})}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, tt.opts...)
			if err := k8s.Create(ctx, c); err != nil {
				t.Fatalf("rejected a valid spec: %v", err)
			}
			t.Cleanup(func() { _ = k8s.Delete(ctx, c) })
		})
	}
}
