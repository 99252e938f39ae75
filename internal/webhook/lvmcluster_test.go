package webhook

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

func cluster(ns, name string, paths ...string) *lvmv1alpha1.LVMCluster {
	c := &lvmv1alpha1.LVMCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	dc := lvmv1alpha1.DeviceClass{Name: "vg1"}
	if len(paths) > 0 {
		dc.DeviceSelector = &lvmv1alpha1.DeviceSelector{}
		for _, p := range paths {
			dc.DeviceSelector.Paths = append(dc.DeviceSelector.Paths, lvmv1alpha1.DevicePath(p))
		}
	}
	c.Spec.Storage.DeviceClasses = []lvmv1alpha1.DeviceClass{dc}
	return c
}

func TestValidateCreate(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := lvmv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	report := &lvmv1alpha1.LVMVolumeGroupNodeStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lvms-system", Name: "node-a"},
		Spec: lvmv1alpha1.LVMVolumeGroupNodeStatusSpec{LiveNodeStatus: []lvmv1alpha1.VGStatus{{
			Name: "vg0", Devices: []string{"/dev/sdb"},
			Excluded: []lvmv1alpha1.ExcludedDevice{{Name: "/dev/sdc", Reasons: []string{"has a filesystem signature: ext4"}}},
		}}},
	}
	tests := []struct {
		name     string
		existing []*lvmv1alpha1.LVMCluster
		reports  bool
		obj      *lvmv1alpha1.LVMCluster
		wantErr  string
		warnings []string
	}{
		{name: "first cluster", obj: cluster("lvms-system", "a")},
		{name: "second cluster", existing: []*lvmv1alpha1.LVMCluster{cluster("lvms-system", "a")}, obj: cluster("lvms-system", "b"),
			wantErr: "only one LVMCluster is supported per cluster and lvms-system/a already exists"},
		{name: "other namespace", obj: cluster("default", "a"), wantErr: `create it in the operator namespace "lvms-system"`},
		{name: "paths seen on a node", reports: true, obj: cluster("lvms-system", "a", "/dev/sdb", "/dev/sdc")},
		{name: "path on no node warns", reports: true, obj: cluster("lvms-system", "a", "/dev/sdb", "/dev/nvme9n1"),
			warnings: []string{"device class vg1: /dev/nvme9n1 exists on no node"}},
		{name: "by-id paths are resolved on the node, no warning", reports: true, obj: cluster("lvms-system", "a", "/dev/disk/by-id/wwn-1")},
		{name: "no reports yet, no warning", obj: cluster("lvms-system", "a", "/dev/nvme9n1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme)
			for _, c := range tt.existing {
				b = b.WithObjects(c)
			}
			if tt.reports {
				b = b.WithObjects(report.DeepCopy())
			}
			v := NewLVMClusterValidator(b.Build(), "lvms-system")
			warnings, err := v.ValidateCreate(context.Background(), tt.obj)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if len(warnings) != len(tt.warnings) {
				t.Fatalf("warnings %q, want %q", warnings, tt.warnings)
			}
			for i, w := range tt.warnings {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %q lacks %q", warnings[i], w)
				}
			}
		})
	}
}
