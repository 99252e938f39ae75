package webhook

import (
	"context"
	"testing"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

func TestDefaultDiscoveryPolicy(t *testing.T) {
	paths := &lvmv1alpha1.DeviceSelector{Paths: []lvmv1alpha1.DevicePath{"/dev/sdb"}}
	optional := &lvmv1alpha1.DeviceSelector{OptionalPaths: []lvmv1alpha1.DevicePath{"/dev/sdc"}}
	tests := []struct {
		name   string
		class  lvmv1alpha1.DeviceClass
		policy lvmv1alpha1.DeviceDiscoveryPolicy
	}{
		{name: "no disks, no policy", policy: lvmv1alpha1.DeviceDiscoveryPolicyStatic},
		{name: "empty selector", class: lvmv1alpha1.DeviceClass{DeviceSelector: &lvmv1alpha1.DeviceSelector{}},
			policy: lvmv1alpha1.DeviceDiscoveryPolicyStatic},
		{name: "paths", class: lvmv1alpha1.DeviceClass{DeviceSelector: paths}},
		{name: "optional paths", class: lvmv1alpha1.DeviceClass{DeviceSelector: optional}},
		{
			name:   "Dynamic kept",
			class:  lvmv1alpha1.DeviceClass{DeviceDiscoveryPolicy: lvmv1alpha1.DeviceDiscoveryPolicyDynamic},
			policy: lvmv1alpha1.DeviceDiscoveryPolicyDynamic,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &lvmv1alpha1.LVMCluster{}
			c.Spec.Storage.DeviceClasses = []lvmv1alpha1.DeviceClass{tt.class}
			if err := (LVMClusterDefaulter{}).Default(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			if got := c.Spec.Storage.DeviceClasses[0].DeviceDiscoveryPolicy; got != tt.policy {
				t.Errorf("policy %q, want %q", got, tt.policy)
			}
		})
	}
}
