package lvmcluster

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

func TestCollector(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = lvmv1alpha1.AddToScheme(scheme)
	_ = topolvmv1.AddToScheme(scheme)
	ns := "lvms-system"
	cluster := &lvmv1alpha1.LVMCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "lvmcluster", Namespace: ns},
		Status: lvmv1alpha1.LVMClusterStatus{
			State: lvmv1alpha1.LVMStatusDegraded,
			DeviceClassStatuses: []lvmv1alpha1.DeviceClassStatus{{
				Name: "thin", NodeStatus: []lvmv1alpha1.NodeStatus{
					{Node: "n1", VGStatus: lvmv1alpha1.VGStatus{Name: "thin", Status: lvmv1alpha1.VGStatusReady}},
					{Node: "n2", VGStatus: lvmv1alpha1.VGStatus{Name: "thin", Status: lvmv1alpha1.VGStatusDegraded}},
				}}},
		},
	}
	report := &lvmv1alpha1.LVMVolumeGroupNodeStatus{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: ns},
		Spec: lvmv1alpha1.LVMVolumeGroupNodeStatusSpec{LiveNodeStatus: []lvmv1alpha1.VGStatus{{
			Name: "thin", Devices: []string{"/dev/sdb", "/dev/sdc"},
			Excluded: []lvmv1alpha1.ExcludedDevice{{Name: "/dev/sda", Reasons: []string{"has partitions"}}},
		}, {
			Name: "mirror", Devices: []string{"/dev/sdd", "/dev/sde"},
			RAIDStatus: &lvmv1alpha1.RAIDStatus{Status: lvmv1alpha1.RAIDDegraded, MemberCount: 2,
				DegradedMemberCount: 1, MinSyncPercent: new(87)},
		}}}}
	lv := func(name, node string) *topolvmv1.LogicalVolume {
		return &topolvmv1.LogicalVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: topolvmv1.LogicalVolumeSpec{NodeName: node, DeviceClass: "thin"}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(cluster, report, lv("a", "n1"), lv("b", "n1"), lv("c", "n2")).Build()
	// The status is a subresource: the fake keeps what WithObjects was given.
	var got lvmv1alpha1.LVMCluster
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(cluster), &got); err != nil || got.Status.State == "" {
		t.Fatalf("fixture: %v %+v", err, got.Status)
	}
	want := `
# HELP lvms_devices Disks of a node that a device class uses (verdict used) or that the device filter excluded (verdict excluded).
# TYPE lvms_devices gauge
lvms_devices{device_class="mirror",node="n1",verdict="excluded"} 0
lvms_devices{device_class="mirror",node="n1",verdict="used"} 2
lvms_devices{device_class="thin",node="n1",verdict="excluded"} 1
lvms_devices{device_class="thin",node="n1",verdict="used"} 2
# HELP lvms_logical_volumes LogicalVolumes (one per volume, snapshot or clone) per node and device class.
# TYPE lvms_logical_volumes gauge
lvms_logical_volumes{device_class="thin",node="n1"} 2
lvms_logical_volumes{device_class="thin",node="n2"} 1
# HELP lvms_lvmcluster_state 1 for the current state of the LVMCluster (Ready, Progressing, Degraded, Failed).
# TYPE lvms_lvmcluster_state gauge
lvms_lvmcluster_state{lvmcluster="lvmcluster",state="Degraded"} 1
# HELP lvms_raid_degraded_count Missing physical volumes of the RAID volume group.
# TYPE lvms_raid_degraded_count gauge
lvms_raid_degraded_count{device_class="mirror",node="n1"} 1
# HELP lvms_raid_health_status RAID health of a device class's volume group on a node: 0 healthy, 1 degraded, 2 failed.
# TYPE lvms_raid_health_status gauge
lvms_raid_health_status{device_class="mirror",node="n1"} 1
# HELP lvms_raid_member_count Physical volumes of the RAID volume group.
# TYPE lvms_raid_member_count gauge
lvms_raid_member_count{device_class="mirror",node="n1"} 2
# HELP lvms_raid_sync_in_progress 1 while a RAID LV of the device class's volume group is not fully in sync, else 0.
# TYPE lvms_raid_sync_in_progress gauge
lvms_raid_sync_in_progress{device_class="mirror",node="n1"} 1
# HELP lvms_raid_sync_percent Lowest resynchronization progress (0-100) of the RAID LVs of the device class's volume group.
# TYPE lvms_raid_sync_percent gauge
lvms_raid_sync_percent{device_class="mirror",node="n1"} 87
# HELP lvms_volume_group_state 1 for the current state of each device class's volume group on each node.
# TYPE lvms_volume_group_state gauge
lvms_volume_group_state{device_class="thin",node="n1",state="Ready"} 1
lvms_volume_group_state{device_class="thin",node="n2",state="Degraded"} 1
`
	if err := testutil.CollectAndCompare(NewCollector(c, ns), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
