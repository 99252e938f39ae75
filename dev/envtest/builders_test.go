package envtest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

var nameSeq atomic.Int64

// uniqueName returns an object name that no other test in the suite uses.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nameSeq.Add(1))
}

// sampleCluster reads the upstream-style sample of config/samples and gives it a unique name.
func sampleCluster(t *testing.T) *lvmv1alpha1.LVMCluster {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "lvm_v1alpha1_lvmcluster.yaml"))
	if err != nil {
		t.Fatalf("read sample: %v", err)
	}
	var c lvmv1alpha1.LVMCluster
	if err := yaml.UnmarshalStrict(raw, &c); err != nil {
		t.Fatalf("decode sample: %v", err)
	}
	c.Name = uniqueName("sample")
	c.Namespace = testNamespace
	return &c
}

// clusterOpt changes a test LVMCluster.
type clusterOpt func(*lvmv1alpha1.LVMCluster)

// newCluster is the sample with its first device class changed by opts.
func newCluster(t *testing.T, opts ...clusterOpt) *lvmv1alpha1.LVMCluster {
	t.Helper()
	c := sampleCluster(t)
	for _, o := range opts {
		o(c)
	}
	return c
}

func dc0(f func(*lvmv1alpha1.DeviceClass)) clusterOpt {
	return func(c *lvmv1alpha1.LVMCluster) { f(&c.Spec.Storage.DeviceClasses[0]) }
}

func thin(f func(*lvmv1alpha1.ThinPoolConfig)) clusterOpt {
	return dc0(func(d *lvmv1alpha1.DeviceClass) { f(d.ThinPoolConfig) })
}

func withPaths(paths ...string) clusterOpt {
	return dc0(func(d *lvmv1alpha1.DeviceClass) {
		if d.DeviceSelector == nil {
			d.DeviceSelector = &lvmv1alpha1.DeviceSelector{}
		}
		d.DeviceSelector.Paths = devicePaths(paths...)
	})
}

func withOptionalPaths(paths ...string) clusterOpt {
	return dc0(func(d *lvmv1alpha1.DeviceClass) {
		if d.DeviceSelector == nil {
			d.DeviceSelector = &lvmv1alpha1.DeviceSelector{}
		}
		d.DeviceSelector.OptionalPaths = devicePaths(paths...)
	})
}

func withForceWipe(v bool) clusterOpt {
	return dc0(func(d *lvmv1alpha1.DeviceClass) {
		if d.DeviceSelector == nil {
			d.DeviceSelector = &lvmv1alpha1.DeviceSelector{}
		}
		d.DeviceSelector.ForceWipeDevicesAndDestroyAllData = ptr.To(v)
	})
}

// thick removes the thin pool from the first device class.
func thick() clusterOpt {
	return dc0(func(d *lvmv1alpha1.DeviceClass) { d.ThinPoolConfig = nil })
}

func withRAID(r lvmv1alpha1.RAIDConfig) clusterOpt {
	return dc0(func(d *lvmv1alpha1.DeviceClass) { d.RAIDConfig = &r })
}

func withNodeSelector(key, value string) clusterOpt {
	return dc0(func(d *lvmv1alpha1.DeviceClass) {
		d.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value},
			}},
		}}}
	})
}

func withSCOptions(o lvmv1alpha1.StorageClassOptions) clusterOpt {
	return dc0(func(d *lvmv1alpha1.DeviceClass) { d.StorageClassOptions = &o })
}

// withExtraClass appends a second device class.
func withExtraClass(d lvmv1alpha1.DeviceClass) clusterOpt {
	return func(c *lvmv1alpha1.LVMCluster) {
		c.Spec.Storage.DeviceClasses = append(c.Spec.Storage.DeviceClasses, d)
	}
}

func devicePaths(paths ...string) []lvmv1alpha1.DevicePath {
	out := make([]lvmv1alpha1.DevicePath, 0, len(paths))
	for _, p := range paths {
		out = append(out, lvmv1alpha1.DevicePath(p))
	}
	return out
}

func qty(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

func reclaim(p corev1.PersistentVolumeReclaimPolicy) *corev1.PersistentVolumeReclaimPolicy {
	return &p
}

func binding(m storagev1.VolumeBindingMode) *storagev1.VolumeBindingMode { return &m }

// assertRejected fails unless err is a rejection whose message holds every fragment.
func assertRejected(t *testing.T, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want rejection mentioning %q", fragments)
	}
	t.Logf("rejected: %v", err)
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("rejection lacks %q:\n%v", f, err)
		}
	}
}

// class is a device class on the nodes labelled zone=<zone> (all nodes when zone is empty) with the
// given disks in deviceSelector.paths (no deviceSelector when none).
func class(name, zone string, paths ...string) lvmv1alpha1.DeviceClass {
	d := lvmv1alpha1.DeviceClass{Name: name}
	if len(paths) > 0 {
		d.DeviceSelector = &lvmv1alpha1.DeviceSelector{Paths: devicePaths(paths...)}
	}
	if zone != "" {
		d.NodeSelector = zoneSelector(zone)
	}
	return d
}

func zoneSelector(zone string) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone},
		}},
	}}}
}

// noClasses empties spec.storage.
func noClasses() clusterOpt {
	return func(c *lvmv1alpha1.LVMCluster) { c.Spec.Storage.DeviceClasses = nil }
}

// dropClass removes the device class named name.
func dropClass(name string) clusterOpt {
	return func(c *lvmv1alpha1.LVMCluster) {
		c.Spec.Storage.DeviceClasses = slices.DeleteFunc(c.Spec.Storage.DeviceClasses,
			func(d lvmv1alpha1.DeviceClass) bool { return d.Name == name })
	}
}

// scOptions changes the StorageClass options of the first device class in place.
func scOptions(f func(*lvmv1alpha1.StorageClassOptions)) clusterOpt {
	return dc0(func(d *lvmv1alpha1.DeviceClass) {
		if d.StorageClassOptions == nil {
			d.StorageClassOptions = &lvmv1alpha1.StorageClassOptions{}
		}
		f(d.StorageClassOptions)
	})
}

func labels(kv ...string) clusterOpt {
	return scOptions(func(o *lvmv1alpha1.StorageClassOptions) {
		o.AdditionalLabels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			o.AdditionalLabels[kv[i]] = kv[i+1]
		}
	})
}

func params(kv ...string) clusterOpt {
	return scOptions(func(o *lvmv1alpha1.StorageClassOptions) {
		o.AdditionalParameters = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			o.AdditionalParameters[kv[i]] = kv[i+1]
		}
	})
}

// many returns n distinct keys with prefix.
func many(prefix string, n int) []string {
	var kv []string
	for i := range n {
		kv = append(kv, fmt.Sprintf("%s%d", prefix, i), "v")
	}
	return kv
}
