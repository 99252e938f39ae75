package vgmanager_test

import (
	"testing"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
	"github.com/lvm-operator/lvm-operator/internal/devices"
)

// A device that left the node while the devices were probed (lsblk listed it, sysfs no longer had
// it: on the local cluster an LV another class was removing, listed without its type) is not
// reported as excluded; a path the class selected that vanished is, so the user sees why it was not
// taken.
func TestVanishedDevicesAreNotReported(t *testing.T) {
	n := newNode([]string{"/dev/sdb", "/dev/sdc"}, nil)
	gone := func(name string) devices.Candidate {
		return devices.Candidate{
			Device: devices.BlockDevice{Name: name, KName: name, Type: "disk", Size: 2 * gib},
			Facts:  devices.Facts{Gone: true},
		}
	}
	n.disks.devs = append(n.disks.devs, gone("/dev/mapper/other-lv"), gone("/dev/sdd"))

	out := n.reconcile(t, vgmanager.Input{Name: "vg1",
		Spec: withPaths(thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic), nil, "/dev/sdb", "/dev/sdd")})

	if r := excluded(out.Status, "/dev/mapper/other-lv"); r != "" {
		t.Errorf("a device gone during the probe was reported as excluded: %q", r)
	}
	if r := excluded(out.Status, "/dev/sdd"); r == "" {
		t.Errorf("the selected path /dev/sdd that vanished is not reported; excluded: %+v", out.Status.Excluded)
	}
}
