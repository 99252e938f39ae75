package envtest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// TestUpdates: fields that cannot change on a live volume group are immutable, with a message that
// says what to do instead; the fields that may change do.
func TestUpdates(t *testing.T) {
	staticMeta := thin(func(p *lvmv1alpha1.ThinPoolConfig) {
		p.MetadataSize = qty("1Gi")
		p.MetadataSizeCalculationPolicy = lvmv1alpha1.MetadataSizeCalculationPolicyStatic
	})
	tests := []struct {
		name   string
		create []clusterOpt
		update []clusterOpt
		want   []string // empty: the update must be accepted
	}{
		{"fstype", nil, []clusterOpt{dc0(func(d *lvmv1alpha1.DeviceClass) { d.FilesystemType = lvmv1alpha1.FilesystemTypeExt4 })},
			[]string{"deviceClasses[0].fstype", "fstype is immutable"}},
		{"nodeSelector changed", []clusterOpt{withNodeSelector("zone", "a")}, []clusterOpt{withNodeSelector("zone", "b")},
			[]string{"deviceClasses[0].nodeSelector", "nodeSelector is immutable"}},
		{"nodeSelector added", nil, []clusterOpt{withNodeSelector("zone", "a")},
			[]string{"deviceClasses[0]", "nodeSelector is immutable"}},
		{"thin pool name", nil, []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.Name = "other" })},
			[]string{"thinPoolConfig.name", "thinPoolConfig.name is immutable"}},
		{"thin pool sizePercent", nil, []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.SizePercent = 50 })},
			[]string{"thinPoolConfig.sizePercent", "sizePercent is immutable"}},
		{"thin pool removed", nil, []clusterOpt{thick()},
			[]string{"deviceClasses[0]", "thinPoolConfig cannot be added or removed"}},
		{"chunk size changed", []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.ChunkSize = qty("128Ki") })},
			[]clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.ChunkSize = qty("256Ki") })},
			[]string{"thinPoolConfig.chunkSize", "chunkSize is immutable"}},
		{"metadata size shrinks", []clusterOpt{staticMeta}, []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.MetadataSize = qty("512Mi") })},
			[]string{"thinPoolConfig.metadataSize", "can only grow"}},
		{"metadata size grows", []clusterOpt{staticMeta}, []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.MetadataSize = qty("2Gi") })},
			nil},
		{"overprovisionRatio changes", nil, []clusterOpt{thin(func(p *lvmv1alpha1.ThinPoolConfig) { p.OverprovisionRatio = 20 })},
			nil},
		{"raidConfig changed",
			[]clusterOpt{thick(), withPaths("/dev/sdb", "/dev/sdc", "/dev/sdd"), withRAID(lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1})},
			[]clusterOpt{withRAID(lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType5})},
			[]string{"raidConfig", "raidConfig is immutable"}},
		{"forceWipe turned on", []clusterOpt{withPaths("/dev/sdb")}, []clusterOpt{withForceWipe(true)},
			[]string{"deviceClasses[0]", "forceWipeDevicesAndDestroyAllData is immutable"}},
		{"reclaimPolicy", nil, []clusterOpt{withSCOptions(lvmv1alpha1.StorageClassOptions{ReclaimPolicy: reclaim(corev1.PersistentVolumeReclaimRetain)})},
			[]string{"deviceClasses[0]", "reclaimPolicy is immutable"}},
		{"volumeBindingMode", nil, []clusterOpt{withSCOptions(lvmv1alpha1.StorageClassOptions{VolumeBindingMode: binding(storagev1.VolumeBindingImmediate)})},
			[]string{"deviceClasses[0]", "volumeBindingMode is immutable"}},
		{"paths may grow", []clusterOpt{withPaths("/dev/sdb")}, []clusterOpt{withPaths("/dev/sdb", "/dev/sdc")},
			nil},
		{"a device class may be added", nil, []clusterOpt{withExtraClass(lvmv1alpha1.DeviceClass{Name: "vg2"})},
			nil},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, tt.create...)
			if err := k8s.Create(ctx, c); err != nil {
				t.Fatalf("create: %v", err)
			}
			t.Cleanup(func() { _ = k8s.Delete(ctx, c) })
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
				t.Fatalf("get: %v", err)
			}
			for _, o := range tt.update {
				o(c)
			}
			err := k8s.Update(ctx, c)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("update rejected, want accepted: %v", err)
				}
				return
			}
			assertRejected(t, err, tt.want...)
		})
	}
}

// TestDeviceClassRemovalAllowed: removing a whole device class is allowed (the operator tears down
// its volume groups), even though its fields are immutable.
func TestDeviceClassRemovalAllowed(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, withExtraClass(lvmv1alpha1.DeviceClass{Name: "vg2", FilesystemType: lvmv1alpha1.FilesystemTypeExt4}))
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, c) })
	c.Spec.Storage.DeviceClasses = c.Spec.Storage.DeviceClasses[:1]
	if err := k8s.Update(ctx, c); err != nil {
		t.Fatalf("removing a device class was rejected: %v", err)
	}
}
