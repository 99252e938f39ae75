package lvmcluster

import (
	"encoding/json"
	"fmt"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// StatusDetailBudget bounds the JSON size of the per-node entries in an LVMCluster's status. etcd
// refuses an object above 1.5 MiB (its default --max-request-bytes), and with every node's
// devices, exclusions and capacity listed an LVMCluster of two device classes reaches that at a
// few thousand nodes: the status could then never be written again (the scale benchmark,
// docs/scale.md).
const StatusDetailBudget = 512 << 10

// compactNodeStatuses keeps the entries within StatusDetailBudget: when the full entries exceed
// it, the entries of Ready volume groups keep only the node, the device class and the status; the
// others, those a user must act on, keep everything. Every node's full report stays in its own
// LVMVolumeGroupNodeStatus. It returns whether it compacted.
func compactNodeStatuses(classes []lvmv1alpha1.DeviceClassStatus) bool {
	if size, err := json.Marshal(classes); err != nil || len(size) <= StatusDetailBudget {
		return false
	}
	for i := range classes {
		for j := range classes[i].NodeStatus {
			ns := &classes[i].NodeStatus[j]
			if ns.Status == lvmv1alpha1.VGStatusReady {
				ns.VGStatus = lvmv1alpha1.VGStatus{Name: ns.Name, Status: ns.Status}
			}
		}
	}
	return true
}

// compactedNote is appended to the VolumeGroupsReady message when the entries were compacted.
func compactedNote(nodes int) string {
	return fmt.Sprintf(" (the %d node entries are shortened to fit the object: each Ready volume group's devices "+
		"and capacity are in its node's LVMVolumeGroupNodeStatus)", nodes)
}
