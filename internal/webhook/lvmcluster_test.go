package webhook

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

const ns = "lvms-system"

func cluster(namespace, name string, paths ...string) *lvmv1alpha1.LVMCluster {
	c := &lvmv1alpha1.LVMCluster{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	c.Spec.Storage.DeviceClasses = []lvmv1alpha1.DeviceClass{class("vg1", "", paths...)}
	c.Spec.Storage.DeviceClasses[0].Default = true
	return c
}

// class is a device class on the nodes labelled zone=<zone> (every node when zone is empty).
func class(name, zone string, paths ...string) lvmv1alpha1.DeviceClass {
	dc := lvmv1alpha1.DeviceClass{Name: name, DeviceDiscoveryPolicy: lvmv1alpha1.DeviceDiscoveryPolicyStatic}
	if len(paths) > 0 {
		dc.DeviceSelector = &lvmv1alpha1.DeviceSelector{}
		for _, p := range paths {
			dc.DeviceSelector.Paths = append(dc.DeviceSelector.Paths, lvmv1alpha1.DevicePath(p))
		}
	}
	if zone != "" {
		dc.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{
				MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}},
				},
			},
		}}
	}
	return dc
}

func twoClasses(a, b lvmv1alpha1.DeviceClass) *lvmv1alpha1.LVMCluster {
	c := cluster(ns, "a")
	a.Default = true
	c.Spec.Storage.DeviceClasses = []lvmv1alpha1.DeviceClass{a, b}
	return c
}

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func newValidator(t *testing.T, objs ...client.Object) *LVMClusterValidator {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := lvmv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return NewLVMClusterValidator(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), ns)
}

func checkResult(t *testing.T, warnings []string, err error, wantErr string, wantWarnings []string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if len(warnings) != len(wantWarnings) {
		t.Fatalf("warnings %q, want %q", warnings, wantWarnings)
	}
	for i, w := range wantWarnings {
		if !strings.Contains(warnings[i], w) {
			t.Errorf("warning %q lacks %q", warnings[i], w)
		}
	}
}

func TestValidateCreate(t *testing.T) {
	report := &lvmv1alpha1.LVMVolumeGroupNodeStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "node-a"},
		Spec: lvmv1alpha1.LVMVolumeGroupNodeStatusSpec{LiveNodeStatus: []lvmv1alpha1.VGStatus{
			{
				Name:    "vg0",
				Devices: []string{"/dev/sdb"},
				Excluded: []lvmv1alpha1.ExcludedDevice{
					{Name: "/dev/sdc", Reasons: []string{"has a filesystem signature: ext4"}},
				},
			},
		}},
	}
	nodes := []client.Object{
		node("n1", map[string]string{"zone": "a", "disk": "fast"}),
		node("n2", map[string]string{"zone": "b"}),
	}
	tests := []struct {
		name     string
		objs     []client.Object
		obj      *lvmv1alpha1.LVMCluster
		wantErr  string
		warnings []string
	}{
		{name: "first cluster", obj: cluster(ns, "a"), warnings: []string{"no deviceSelector.paths"}},
		{name: "second cluster", objs: []client.Object{cluster(ns, "a")}, obj: cluster(ns, "b"),
			wantErr: "only one LVMCluster is supported per cluster and lvms-system/a already exists"},
		{
			name:    "other namespace",
			obj:     cluster("default", "a"),
			wantErr: `create it in the operator namespace "lvms-system"`,
		},
		{name: "paths seen on a node", objs: []client.Object{report}, obj: cluster(ns, "a", "/dev/sdb", "/dev/sdc")},
		{
			name:     "path on no node warns",
			objs:     []client.Object{report},
			obj:      cluster(ns, "a", "/dev/sdb", "/dev/nvme9n1"),
			warnings: []string{"device class vg1: /dev/nvme9n1 exists on no node"},
		},
		{
			name: "by-id paths are resolved on the node, no warning",
			objs: []client.Object{report},
			obj:  cluster(ns, "a", "/dev/disk/by-id/wwn-1"),
		},
		{name: "no reports yet, no warning", obj: cluster(ns, "a", "/dev/nvme9n1")},
		{
			name: "same disk, disjoint node pools",
			objs: nodes,
			obj:  twoClasses(class("vg1", "a", "/dev/sdb"), class("vg2", "b", "/dev/sdb")),
		},
		{
			name:    "same disk, selectors overlap on n1",
			objs:    nodes,
			obj:     twoClasses(class("vg1", "a", "/dev/sdb"), class("vg2", "", "/dev/sdc", "/dev/sdb")),
			wantErr: "device classes vg1 and vg2 both list /dev/sdb and both select node n1",
		},
		{
			name: "same disk, selectors overlap on no node yet",
			objs: nodes[1:],
			obj:  twoClasses(class("vg1", "a", "/dev/sdb"), class("vg2", "", "/dev/sdb")),
		},
		{name: "upstream warnings", obj: func() *lvmv1alpha1.LVMCluster {
			c := cluster(ns, "a")
			c.Spec.Storage.DeviceClasses[0].Default = false
			c.Spec.Storage.DeviceClasses[0].DeviceDiscoveryPolicy = lvmv1alpha1.DeviceDiscoveryPolicyDynamic
			c.Spec.Storage.DeviceClasses[0].ThinPoolConfig = &lvmv1alpha1.ThinPoolConfig{Name: "tp", SizePercent: 95,
				MetadataSizeCalculationPolicy: lvmv1alpha1.MetadataSizeCalculationPolicyStatic}
			return c
		}(), warnings: []string{"sizePercent 95 is above 90%", "metadataSize is unset", "no deviceSelector.paths",
			"deviceDiscoveryPolicy is Dynamic", "no device class is default"}},
		{name: "label value not a label value", obj: func() *lvmv1alpha1.LVMCluster {
			c := cluster(ns, "a", "/dev/sdb")
			c.Spec.Storage.DeviceClasses[0].StorageClassOptions = &lvmv1alpha1.StorageClassOptions{
				AdditionalLabels: map[string]string{"team": "ok", "tier": "not valid!"}}
			return c
		}(), wantErr: "spec.storage.deviceClasses[0].storageClassOptions.additionalLabels[tier]: \"not valid!\" is not a label value"},
		{name: "forceWipe with optionalPaths only", obj: func() *lvmv1alpha1.LVMCluster {
			c := cluster(ns, "a")
			c.Spec.Storage.DeviceClasses[0].DeviceSelector = &lvmv1alpha1.DeviceSelector{
				OptionalPaths: []lvmv1alpha1.DevicePath{"/dev/sdb"}, ForceWipeDevicesAndDestroyAllData: ptr.To(true)}
			return c
		}(), warnings: []string{"only wipes disks listed in deviceSelector.paths"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warnings, err := newValidator(t, tt.objs...).ValidateCreate(context.Background(), tt.obj)
			checkResult(t, warnings, err, tt.wantErr, tt.warnings)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	nodes := []client.Object{node("n1", map[string]string{"zone": "a"})}
	disjoint := twoClasses(class("vg1", "a", "/dev/sdb"), class("vg2", "b", "/dev/sdc"))
	overlapping := twoClasses(class("vg1", "a", "/dev/sdb"), class("vg2", "", "/dev/sdc", "/dev/sdb"))
	tests := []struct {
		name     string
		old, obj *lvmv1alpha1.LVMCluster
		wantErr  string
		warnings []string
	}{
		{name: "shared disk added on a node both select", old: disjoint,
			obj:     twoClasses(class("vg1", "a", "/dev/sdb"), class("vg2", "", "/dev/sdc", "/dev/sdb")),
			wantErr: "device classes vg1 and vg2 both list /dev/sdb and both select node n1"},
		{
			name: "conflict that already existed does not block other changes",
			old:  overlapping,
			obj:  overlapping.DeepCopy(),
		},
		{name: "no Dynamic warning on update", old: cluster(ns, "a"), obj: func() *lvmv1alpha1.LVMCluster {
			c := cluster(ns, "a")
			c.Spec.Storage.DeviceClasses[0].DeviceDiscoveryPolicy = lvmv1alpha1.DeviceDiscoveryPolicyDynamic
			return c
		}(), warnings: []string{"no deviceSelector.paths"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warnings, err := newValidator(t, nodes...).ValidateUpdate(context.Background(), tt.old, tt.obj)
			checkResult(t, warnings, err, tt.wantErr, tt.warnings)
		})
	}
}
