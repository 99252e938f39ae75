//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestTenantVolumeGroupStaysInItsVolume: LVM metadata that a pod writes into its own Block volume,
// here a VG named like the node's thick volume group, does not reach the product's lvm2 commands.
// The kubelet attaches a loop device to the volume on the node, and lvm2 without the product's
// filter (devices.NewLoopFilter) sees two VGs named thick there and refuses every command on
// the name ("Multiple VGs found with the same name"). While the pod runs, a new thick claim on the
// node is provisioned, used and deleted.
func TestTenantVolumeGroupStaysInItsVolume(t *testing.T) {
	fullSetOnly(t, "a volume group made by a tenant inside its claim is not scanned by the node")
	e := newEnv(t)
	node := e.nodes()[0]
	e.claim("vg-tenant", thickClass, "64Mi", true, "")
	e.pod("vg-tenant", "vg-tenant", true, node, "sleep 3600")
	e.running("vg-tenant")
	pv, _ := e.volumeOf("vg-tenant")

	// The tenant's metadata, written from the node through the loop device with a view of that device
	// alone (its own dev directory), as lvm2 in the pod would see it.
	out := e.onAgent(node, tenantVGScript(pv.Name, thickVG))
	if !strings.Contains(out, "VGs named "+thickVG+" seen by lvm2 without a filter: 2") {
		t.Fatalf("the tenant's VG is not beside the node's (the test would prove nothing): %s", out)
	}
	t.Logf("on %s: %s", node, strings.TrimSpace(out))

	e.claim("vg-after", thickClass, "64Mi", true, "")
	e.pod("vg-after", "vg-after", true, node, "head -c 4096 /dev/xvda > /dev/null && echo read && sleep 3600")
	e.waitOutput("vg-after", "read")
	after, lv := e.volumeOf("vg-after")
	if lv.Spec.NodeName != node {
		t.Fatalf("vg-after's LogicalVolume is on %s, want %s", lv.Spec.NodeName, node)
	}
	for _, name := range []string{"vg-after", "vg-tenant"} {
		e.deleteAll(newPod(name, ""), newClaim(name, thickClass, "64Mi"))
	}
	e.waitGone(after)
	e.waitGone(pv)
	if n := strings.TrimSpace(e.onAgent(node, countVGs(thickVG))); n != "1" {
		t.Fatalf("after the tenant's pod and volume are gone lvm2 sees %s VGs named %s on %s, want 1", n, thickVG, node)
	}
	e.lvsMatchLogicalVolumes(node)
}

// tenantVGScript finds the loop device the kubelet attached for the PV and writes a PV label and a
// VG named vg on it through a private dev directory holding that device alone (so lvm2 there
// neither sees the node's VG nor refuses the name), then counts the VGs named vg that lvm2 without
// a filter sees on the node.
func tenantVGScript(pv, vg string) string {
	return fmt.Sprintf(`set -e
loop=""
for f in /sys/class/block/loop*/loop/backing_file; do
	if grep -q %[1]q "$f"; then loop=$(basename "$(dirname "$(dirname "$f")")"); fi
done
test -n "$loop" || { echo "no loop device backs %[1]s"; exit 1; }
d=$(mktemp -d)
mknod "$d/$loop" b $(tr : ' ' < "/sys/class/block/$loop/dev")
cfg="devices { dir = \"$d\" scan = [ \"$d\" ] global_filter = [ \"a|^$d/$loop\$|\", \"r|.*|\" ] }"
lvm pvcreate -q --config "$cfg" "$d/$loop"
lvm vgcreate -q --config "$cfg" %[2]s "$d/$loop"
rm -rf "$d"
echo "loop device /dev/$loop; VGs named %[2]s seen by lvm2 without a filter: $(%[3]s)"
`, pv, vg, countVGs(vg))
}

// countVGs is a command printing how many VGs named vg lvm2 on the node sees (without a filter).
func countVGs(vg string) string {
	return fmt.Sprintf("lvm vgs --noheadings -o vg_name 2>/dev/null | grep -c -x ' *%s *' || true", vg)
}
