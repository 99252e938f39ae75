package lvmcluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

func TestNodeSummary(t *testing.T) {
	vg := func(name string, st lvmv1alpha1.VGStatusType, reason string) lvmv1alpha1.VGStatus {
		return lvmv1alpha1.VGStatus{Name: name, Status: st, Reason: reason}
	}
	for _, tc := range []struct {
		name string
		vgs  []lvmv1alpha1.VGStatus
		want lvmv1alpha1.LVMVolumeGroupNodeStatusStatus
	}{
		{"nothing reported yet", nil, lvmv1alpha1.LVMVolumeGroupNodeStatusStatus{State: "Progressing", Ready: "0/0"}},
		{"all ready", []lvmv1alpha1.VGStatus{vg("a", "Ready", ""), vg("b", "Ready", "")},
			lvmv1alpha1.LVMVolumeGroupNodeStatusStatus{State: "Ready", Ready: "2/2"}},
		{"the worst wins, every one is named", []lvmv1alpha1.VGStatus{
			vg("a", "Degraded", "thin pool tp is 90.0% full of data"), vg("b", "Failed", "disk gone"),
			vg("c", "", ""), vg("d", "Ready", ""),
		}, lvmv1alpha1.LVMVolumeGroupNodeStatusStatus{State: "Failed", Ready: "1/4",
			Message: "a: Degraded: thin pool tp is 90.0% full of data; b: Failed: disk gone; c: Progressing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &lvmv1alpha1.LVMVolumeGroupNodeStatus{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
			r.Spec.LiveNodeStatus = tc.vgs
			if got := nodeSummary(r); got != tc.want {
				t.Errorf("nodeSummary = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestClassCondition(t *testing.T) {
	ns := func(node string, st lvmv1alpha1.VGStatusType, reason string) lvmv1alpha1.NodeStatus {
		return lvmv1alpha1.NodeStatus{
			Node:     node,
			VGStatus: lvmv1alpha1.VGStatus{Name: "thin", Status: st, Reason: reason},
		}
	}
	dcs := lvmv1alpha1.DeviceClassStatus{Name: "thin", NodeStatus: []lvmv1alpha1.NodeStatus{
		ns("n1", "Ready", ""), ns("n2", "Degraded", "thin pool tp is 91.0% full of data"),
	}}
	c := classCondition(dcs)
	if c.Type != lvmv1alpha1.ConditionVolumeGroupsReady || c.Status != metav1.ConditionFalse ||
		c.Reason != ReasonDegraded ||
		c.Message != "node n2, device class thin: Degraded: thin pool tp is 91.0% full of data" {
		t.Errorf("degraded class: %+v", c)
	}
	dcs.NodeStatus[1] = ns("n2", "Ready", "")
	if c := classCondition(dcs); c.Status != metav1.ConditionTrue || c.Message != "2 volume group(s) Ready" {
		t.Errorf("ready class: %+v", c)
	}
	if c := classCondition(lvmv1alpha1.DeviceClassStatus{Name: "thin"}); c.Status != metav1.ConditionFalse ||
		c.Reason != ReasonNoNodes {
		t.Errorf("class without nodes: %+v", c)
	}
}
