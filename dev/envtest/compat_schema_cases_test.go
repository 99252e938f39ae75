package envtest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// schemaCases are the rows S1-S14 (upstream's CRD schema: device classes, thin pools, RAID).
func schemaCases() []compatCase {
	tp := func(f func(*lvmv1alpha1.ThinPoolConfig)) []clusterOpt { return []clusterOpt{thin(f)} }
	raid := func(r lvmv1alpha1.RAIDConfig, paths ...string) []clusterOpt {
		return []clusterOpt{thick(), withPaths(paths...), withRAID(r)}
	}
	r5 := lvmv1alpha1.RAIDType5
	return []compatCase{
		{rule: "S1", name: "device class name twice", create: []clusterOpt{withExtraClass(class("vg1", ""))}, by: byCRD,
			want: []string{"spec.storage.deviceClasses[1]", "Duplicate value"}},
		{
			rule:   "S2",
			name:   "device class name not a DNS label",
			create: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.Name = "VG_1" })},
			by:     byCRD,
			want:   []string{"deviceClasses[0].name", "should match"},
		},
		{
			rule:   "S2",
			name:   "empty device class name",
			create: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.Name = "" })},
			by:     byCRD,
			want:   []string{"deviceClasses[0].name", "at least 1 chars long"},
		},
		{
			rule:   "S2",
			name:   "DNS label accepted",
			create: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.Name = "nvme-0" })},
		},
		{
			rule:   "S3",
			name:   "unknown fstype",
			create: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.FilesystemType = "btrfs" })},
			by:     byCRD,
			want:   []string{"deviceClasses[0].fstype", `Unsupported value: "btrfs"`, `"xfs", "ext4"`},
		},
		{
			rule:   "S3",
			name:   "fstype defaults to xfs",
			create: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.FilesystemType = "" })},
			check: func(t *testing.T, c *lvmv1alpha1.LVMCluster, _ bool) {
				expect(t, "fstype", c.Spec.Storage.DeviceClasses[0].FilesystemType, lvmv1alpha1.FilesystemTypeXFS)
			},
		},
		{
			rule: "S4",
			name: "fstype changed",
			update: []clusterOpt{
				dc0(func(d *lvmv1alpha1.DeviceClass) { d.FilesystemType = lvmv1alpha1.FilesystemTypeExt4 }),
			},
			by:   byCRD,
			want: []string{"deviceClasses[0].fstype", "fstype is immutable"},
		},
		{
			rule:   "S5",
			name:   "unknown deviceDiscoveryPolicy",
			create: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.DeviceDiscoveryPolicy = "Sometimes" })},
			by:     byCRD,
			want:   []string{"deviceClasses[0].deviceDiscoveryPolicy", "Unsupported value"},
		},
		{
			rule: "S5",
			name: "Static accepted",
			create: []clusterOpt{
				dc0(
					func(d *lvmv1alpha1.DeviceClass) { d.DeviceDiscoveryPolicy = lvmv1alpha1.DeviceDiscoveryPolicyStatic },
				),
			},
		},
		{
			rule: "M1",
			name: "no disks and no policy: Static with the webhook",
			check: func(t *testing.T, c *lvmv1alpha1.LVMCluster, webhook bool) {
				want := lvmv1alpha1.DeviceDiscoveryPolicy(
					"",
				) // the CRDs alone leave it unset, which the node agent reads as Static too
				if webhook {
					want = lvmv1alpha1.DeviceDiscoveryPolicyStatic
				}
				expect(t, "deviceDiscoveryPolicy", c.Spec.Storage.DeviceClasses[0].DeviceDiscoveryPolicy, want)
			},
		},
		{rule: "M1", name: "listed disks leave the policy unset", create: []clusterOpt{withPaths("/dev/sdb")},
			check: func(t *testing.T, c *lvmv1alpha1.LVMCluster, _ bool) {
				expect(t, "deviceDiscoveryPolicy", c.Spec.Storage.DeviceClasses[0].DeviceDiscoveryPolicy, "")
			}},
		{rule: "M1", name: "explicit Dynamic is kept", create: []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) {
			d.DeviceDiscoveryPolicy = lvmv1alpha1.DeviceDiscoveryPolicyDynamic
		})}, check: func(t *testing.T, c *lvmv1alpha1.LVMCluster, _ bool) {
			expect(
				t,
				"deviceDiscoveryPolicy",
				c.Spec.Storage.DeviceClasses[0].DeviceDiscoveryPolicy,
				lvmv1alpha1.DeviceDiscoveryPolicyDynamic,
			)
		}},
		{rule: "M1", name: "update does not default", update: []clusterOpt{func(c *lvmv1alpha1.LVMCluster) {
			c.Spec.Storage.DeviceClasses[0].DeviceDiscoveryPolicy = ""
		}}, check: func(t *testing.T, c *lvmv1alpha1.LVMCluster, _ bool) {
			expect(t, "deviceDiscoveryPolicy", c.Spec.Storage.DeviceClasses[0].DeviceDiscoveryPolicy, "")
		}},
		{rule: "S6", name: "thin pool without a name", create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.Name = "" }),
			by: byCRD, want: []string{"thinPoolConfig.name", "at least 1 chars long"}},
		{
			rule:   "S7",
			name:   "sizePercent below 10",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.SizePercent = 5 }),
			by:     byCRD,
			want:   []string{"thinPoolConfig.sizePercent", "greater than or equal to 10"},
		},
		{
			rule:   "S7",
			name:   "sizePercent above 100",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.SizePercent = 101 }),
			by:     byCRD,
			want:   []string{"thinPoolConfig.sizePercent", "less than or equal to 100"},
		},
		{
			rule:   "S7",
			name:   "sizePercent defaults to 90",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.SizePercent = 0 }),
			check: func(t *testing.T, c *lvmv1alpha1.LVMCluster, _ bool) {
				expect(t, "sizePercent", c.Spec.Storage.DeviceClasses[0].ThinPoolConfig.SizePercent, int32(90))
			},
		},
		{
			rule:   "S8",
			name:   "overprovisionRatio 0",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.OverprovisionRatio = 0 }),
			by:     byCRD,
			want:   []string{"thinPoolConfig.overprovisionRatio", "greater than or equal to 1"},
		},
		{
			rule:   "S8",
			name:   "overprovisionRatio 101",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.OverprovisionRatio = 101 }),
			by:     byCRD,
			want:   []string{"thinPoolConfig.overprovisionRatio", "less than or equal to 100"},
		},
		{
			rule:   "S8",
			name:   "overprovisionRatio 100",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.OverprovisionRatio = 100 }),
		},
		{
			rule:   "S9",
			name:   "unknown chunkSizeCalculationPolicy",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.ChunkSizeCalculationPolicy = "Auto" }),
			by:     byCRD,
			want:   []string{"thinPoolConfig.chunkSizeCalculationPolicy", "Unsupported value"},
		},
		{
			rule:   "S10",
			name:   "unknown metadataSizeCalculationPolicy",
			create: tp(func(p *lvmv1alpha1.ThinPoolConfig) { p.MetadataSizeCalculationPolicy = "Auto" }),
			by:     byCRD,
			want:   []string{"thinPoolConfig.metadataSizeCalculationPolicy", "Unsupported value"},
		},
		{rule: "S9", name: "thin pool defaults", create: tp(func(p *lvmv1alpha1.ThinPoolConfig) {
			p.ChunkSizeCalculationPolicy, p.MetadataSizeCalculationPolicy = "", ""
		}), check: func(t *testing.T, c *lvmv1alpha1.LVMCluster, _ bool) {
			p := c.Spec.Storage.DeviceClasses[0].ThinPoolConfig
			expect(
				t,
				"chunkSizeCalculationPolicy",
				p.ChunkSizeCalculationPolicy,
				lvmv1alpha1.ChunkSizeCalculationPolicyStatic,
			)
			expect(
				t,
				"metadataSizeCalculationPolicy",
				p.MetadataSizeCalculationPolicy,
				lvmv1alpha1.MetadataSizeCalculationPolicyHost,
			)
		}},
		{
			rule:   "S11",
			name:   "unknown RAID level",
			create: raid(lvmv1alpha1.RAIDConfig{Type: "raid0"}, "/dev/sdb", "/dev/sdc"),
			by:     byCRD,
			want:   []string{"raidConfig.type", `Unsupported value: "raid0"`},
		},
		{
			rule: "S12",
			name: "mirrors 0",
			create: raid(
				lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1, Mirrors: ptr.To[int32](0)},
				"/dev/sdb",
				"/dev/sdc",
			),
			by:   byCRD,
			want: []string{"raidConfig.mirrors", "greater than or equal to 1"},
		},
		{
			rule: "S13",
			name: "stripes 1",
			create: raid(
				lvmv1alpha1.RAIDConfig{Type: r5, Stripes: ptr.To[int32](1)},
				"/dev/sdb",
				"/dev/sdc",
				"/dev/sdd",
			),
			by:   byCRD,
			want: []string{"raidConfig.stripes", "greater than or equal to 2"},
		},
		{
			rule:   "S14",
			name:   "raidConfig changed",
			create: raid(lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1}, "/dev/sdb", "/dev/sdc", "/dev/sdd"),
			update: []clusterOpt{
				withRAID(lvmv1alpha1.RAIDConfig{Type: r5}),
			},
			by:   byCRD,
			want: []string{"raidConfig", "raidConfig is immutable"},
		},
	}
}

// storageClassSchemaCases are the rows S15-S20 (upstream's CRD schema: StorageClass options and
// optional fields) and X1-X5 (upstream's examples).
func storageClassSchemaCases() []compatCase {
	return []compatCase{
		{
			rule: "S15",
			name: "storageClassOptions defaults",
			check: func(t *testing.T, c *lvmv1alpha1.LVMCluster, _ bool) {
				o := c.Spec.Storage.DeviceClasses[0].StorageClassOptions
				if o == nil || o.ReclaimPolicy == nil || o.VolumeBindingMode == nil {
					t.Fatalf("storageClassOptions not defaulted: %+v", o)
				}
				expect(t, "reclaimPolicy", *o.ReclaimPolicy, corev1.PersistentVolumeReclaimDelete)
				expect(t, "volumeBindingMode", *o.VolumeBindingMode, storagev1.VolumeBindingWaitForFirstConsumer)
			},
		},
		{
			rule:   "S16",
			name:   "unknown reclaimPolicy",
			create: []clusterOpt{withSCOptions(lvmv1alpha1.StorageClassOptions{ReclaimPolicy: reclaim("Recycle")})},
			by:     byCRD,
			want:   []string{"storageClassOptions.reclaimPolicy", `Unsupported value: "Recycle"`},
		},
		{
			rule: "S16",
			name: "reclaimPolicy changed",
			update: []clusterOpt{scOptions(func(o *lvmv1alpha1.StorageClassOptions) {
				o.ReclaimPolicy = reclaim(corev1.PersistentVolumeReclaimRetain)
			})},
			by: byCRD,
			want: []string{
				"deviceClasses[0].storageClassOptions",
				"reclaimPolicy is immutable",
				"create a new device class",
			},
		},
		{
			rule:   "S17",
			name:   "unknown volumeBindingMode",
			create: []clusterOpt{withSCOptions(lvmv1alpha1.StorageClassOptions{VolumeBindingMode: binding("Later")})},
			by:     byCRD,
			want:   []string{"storageClassOptions.volumeBindingMode", "Unsupported value"},
		},
		{
			rule: "S17",
			name: "volumeBindingMode changed",
			update: []clusterOpt{scOptions(func(o *lvmv1alpha1.StorageClassOptions) {
				o.VolumeBindingMode = binding(storagev1.VolumeBindingImmediate)
			})},
			by:   byCRD,
			want: []string{"deviceClasses[0].storageClassOptions", "volumeBindingMode is immutable"},
		},
		{rule: "S18", name: "17 additionalParameters", create: []clusterOpt{params(many("example.com/p", 17)...)},
			by: byCRD, want: []string{"storageClassOptions.additionalParameters", "must have at most 16 items"}},
		{rule: "S18", name: "16 additionalParameters", create: []clusterOpt{params(many("example.com/p", 16)...)}},
		{rule: "S18", name: "additionalParameters changed", create: []clusterOpt{params("example.com/tier", "fast")},
			update: []clusterOpt{params("example.com/tier", "slow")}, by: byCRD,
			want: []string{"storageClassOptions.additionalParameters", "additionalParameters is immutable"}},
		{rule: "S19", name: "17 additionalLabels", create: []clusterOpt{labels(many("example.com/l", 17)...)},
			by: byCRD, want: []string{"storageClassOptions.additionalLabels", "must have at most 16 items"}},
		{
			rule:   "S19",
			name:   "additionalLabels may change",
			create: []clusterOpt{labels("team", "a")},
			update: []clusterOpt{labels("team", "b", "tier", "gold")},
		},
		{
			rule:   "S20",
			name:   "no device classes",
			create: []clusterOpt{noClasses()},
			warn:   []string{"no device class is default"},
		},
		{rule: "X1", name: "upstream sample", doc: upstreamSample},
		{rule: "X2", name: "upstream loop device example", doc: upstreamLoopDevices},
		{rule: "X3", name: "upstream raid1 example", doc: upstreamRAID1},
		{rule: "X4", name: "upstream raid5 example", doc: upstreamRAID5},
		{rule: "X5", name: "upstream raid1 with optionalPaths example", doc: upstreamRAID1Optional},
		{rule: "X6", name: "quantities written as integers", doc: integerQuantities},
		{rule: "X6", name: "stripeSize written as an integer", doc: integerStripeSize},
	}
}

func expect[T comparable](t *testing.T, field string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", field, got, want)
	}
}

// The examples of upstream LVMS's config/samples and docs (loop-devices.md, design/raid-support.md).
const (
	upstreamSample = `apiVersion: lvm.topolvm.io/v1alpha1
kind: LVMCluster
spec:
  storage:
    deviceClasses:
    - name: vg1
      default: true
      thinPoolConfig: {name: thin-pool-1, sizePercent: 90, overprovisionRatio: 10}
      fstype: xfs
`
	upstreamLoopDevices = `apiVersion: lvm.topolvm.io/v1alpha1
kind: LVMCluster
spec:
  storage:
    deviceClasses:
    - name: vg1
      deviceSelector: {paths: [/dev/loop_device]}
`
	upstreamRAID1 = `apiVersion: lvm.topolvm.io/v1alpha1
kind: LVMCluster
spec:
  storage:
    deviceClasses:
    - name: raid-vg
      raidConfig: {type: raid1}
      deviceSelector: {paths: [/dev/sda, /dev/sdb]}
`
	upstreamRAID5 = `apiVersion: lvm.topolvm.io/v1alpha1
kind: LVMCluster
spec:
  storage:
    deviceClasses:
    - name: raid5-vg
      raidConfig: {type: raid5, stripeSize: 256Ki}
      deviceSelector: {paths: [/dev/sda, /dev/sdb, /dev/sdc, /dev/sdd]}
`
	// integerQuantities and integerStripeSize write resource quantities as YAML integers, which
	// upstream's int-or-string schema accepts.
	integerQuantities = `apiVersion: lvm.topolvm.io/v1alpha1
kind: LVMCluster
spec:
  storage:
    deviceClasses:
    - name: vg1
      default: true
      thinPoolConfig: {name: thin-pool-1, overprovisionRatio: 10, chunkSizeCalculationPolicy: Static,
        chunkSize: 131072, metadataSizeCalculationPolicy: Static, metadataSize: 1073741824}
`
	integerStripeSize = `apiVersion: lvm.topolvm.io/v1alpha1
kind: LVMCluster
spec:
  storage:
    deviceClasses:
    - name: raid5-vg
      raidConfig: {type: raid5, stripeSize: 262144}
      deviceSelector: {paths: [/dev/sda, /dev/sdb, /dev/sdc, /dev/sdd]}
`
	upstreamRAID1Optional = `apiVersion: lvm.topolvm.io/v1alpha1
kind: LVMCluster
spec:
  storage:
    deviceClasses:
    - name: raid1-with-optional
      raidConfig: {type: raid1}
      deviceSelector: {paths: [/dev/sda, /dev/sdb], optionalPaths: [/dev/sdc]}
`
)
