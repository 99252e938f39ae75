package vgmanager_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
)

func TestVolumeGroupUpdateMatters(t *testing.T) {
	const node = "node-a"
	base := func() *lvmv1alpha1.LVMVolumeGroup {
		return &lvmv1alpha1.LVMVolumeGroup{ObjectMeta: metav1.ObjectMeta{
			Name: "vg1", Generation: 3, Finalizers: []string{vgmanager.Finalizer("node-b")},
			Annotations: map[string]string{vgmanager.WipedAnnotation("node-b"): "t"},
		}}
	}
	now := metav1.Now()
	cases := []struct {
		name   string
		change func(*lvmv1alpha1.LVMVolumeGroup)
		want   bool
	}{
		{"nothing", func(*lvmv1alpha1.LVMVolumeGroup) {}, false},
		{"another node's finalizer added", func(v *lvmv1alpha1.LVMVolumeGroup) {
			v.Finalizers = append(v.Finalizers, vgmanager.Finalizer("node-c"))
		}, false},
		{"another node's wiped annotation", func(v *lvmv1alpha1.LVMVolumeGroup) {
			v.Annotations[vgmanager.WipedAnnotation("node-c")] = "t"
		}, false},
		{"status conditions", func(v *lvmv1alpha1.LVMVolumeGroup) {
			v.Status.Conditions = []metav1.Condition{{Type: "VolumeGroupsReady", Status: metav1.ConditionTrue}}
		}, false},
		{"spec (generation)", func(v *lvmv1alpha1.LVMVolumeGroup) { v.Generation++ }, true},
		{"deletion", func(v *lvmv1alpha1.LVMVolumeGroup) { v.DeletionTimestamp = &now }, true},
		{"this node's finalizer added", func(v *lvmv1alpha1.LVMVolumeGroup) {
			v.Finalizers = append(v.Finalizers, vgmanager.Finalizer(node))
		}, true},
		{"this node's wiped annotation", func(v *lvmv1alpha1.LVMVolumeGroup) {
			v.Annotations[vgmanager.WipedAnnotation(node)] = "t"
		}, true},
		{"dry-run annotation", func(v *lvmv1alpha1.LVMVolumeGroup) {
			v.Annotations[vgmanager.DryRunAnnotation] = "true"
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, updated := base(), base()
			tc.change(updated)
			if got := vgmanager.VolumeGroupUpdateMatters(node, old, updated); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
