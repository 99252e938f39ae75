package lvmcluster

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

func TestCompactNodeStatuses(t *testing.T) {
	entries := func(nodes int) []lvmv1alpha1.DeviceClassStatus {
		var out []lvmv1alpha1.DeviceClassStatus
		for _, dc := range []string{"thin", "thick"} {
			dcs := lvmv1alpha1.DeviceClassStatus{Name: dc}
			for i := range nodes {
				vg := lvmv1alpha1.VGStatus{
					Name:     dc,
					Status:   lvmv1alpha1.VGStatusReady,
					Devices:  []string{"/dev/sdb"},
					Excluded: []lvmv1alpha1.ExcludedDevice{{Name: "/dev/sda", Reasons: []string{"has partitions"}}},
					Capacity: &lvmv1alpha1.VGCapacity{
						Size: resource.MustParse("1Ti"),
						Free: resource.MustParse("10Gi"),
					},
				}
				if i == 7 {
					vg.Status, vg.Reason = lvmv1alpha1.VGStatusFailed, "vgcreate failed"
				}
				dcs.NodeStatus = append(
					dcs.NodeStatus,
					lvmv1alpha1.NodeStatus{VGStatus: vg, Node: fmt.Sprintf("n%05d", i)},
				)
			}
			out = append(out, dcs)
		}
		return out
	}
	small := entries(100)
	if compactNodeStatuses(small) || small[0].NodeStatus[0].Capacity == nil {
		t.Fatal("100 nodes' entries were compacted")
	}
	large := entries(5000)
	if !compactNodeStatuses(large) {
		t.Fatal("5,000 nodes' entries were not compacted")
	}
	raw, _ := json.Marshal(large)
	if len(raw) > StatusDetailBudget*2 {
		t.Errorf("compacted entries are %d bytes", len(raw))
	}
	for _, dcs := range large {
		ready, failed := dcs.NodeStatus[0], dcs.NodeStatus[7]
		if ready.Capacity != nil || ready.Devices != nil || ready.Excluded != nil || ready.Node != "n00000" ||
			ready.Name != dcs.Name || ready.Status != lvmv1alpha1.VGStatusReady {
			t.Errorf("Ready entry %+v", ready)
		}
		if failed.Capacity == nil || failed.Reason == "" || len(failed.Excluded) != 1 {
			t.Errorf("Failed entry lost its details: %+v", failed)
		}
	}
}
