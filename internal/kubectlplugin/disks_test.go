package kubectlplugin

import (
	"slices"
	"strings"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/devices"
)

// TestLeftOutReasons checks that the reasons the plugin recognises are the device filter's own, so a
// reworded reason in internal/devices cannot silently put thin pools or the kubelet's loop devices back
// into the table of disks.
func TestLeftOutReasons(t *testing.T) {
	cases := []struct {
		name   string
		c      devices.Candidate
		reason func(string) bool
	}{
		{
			name: "logical volume",
			c: devices.Candidate{
				Device: devices.BlockDevice{Name: "/dev/mapper/vg-pool", Type: "lvm", Size: 1 << 30},
			},
			reason: func(r string) bool { return strings.HasSuffix(r, lvReason) },
		},
		{
			name: "dm-crypt mapping of a logical volume",
			c: devices.Candidate{
				Device: devices.BlockDevice{Name: "/dev/mapper/lvms-pvc-1", Type: "crypt", ParentType: "lvm",
					Size: 1 << 30},
			},
			reason: func(r string) bool { return r == encryptedLVReason },
		},
		{
			name: "kubelet loop",
			c: devices.Candidate{
				Device: devices.BlockDevice{Name: "/dev/loop0", Type: "loop", Size: 1 << 30},
				Facts: devices.Facts{LoopBackingFile: "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/" +
					"pvc-1/dev/0f1e"},
			},
			reason: func(r string) bool { return r == kubeletLoopReason },
		},
	}
	for _, tc := range cases {
		v := devices.Evaluate(tc.c, devices.Policy{})
		if !slices.ContainsFunc(v.Reasons, tc.reason) {
			t.Errorf(
				"%s: the device filter's reasons %q do not contain the one the plugin looks for",
				tc.name,
				v.Reasons,
			)
		}
	}
}
