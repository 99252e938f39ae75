//go:build guest

package vgmanager_test

import (
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
	"github.com/lvm-operator/lvm-operator/internal/devices"
)

// TestGuestInUseDisksAreNeverTouched: a node where one disk is held open raw by a process, one has its
// device node bind-mounted, one is active swap and one is a PV of a foreign volume group. The default
// all-disks class takes only the free disk, names each reason in the status, the opt-in wipe refuses
// every busy disk, and the busy disks stay as they were (checksums of their first and last 128 MiB).
func TestGuestInUseDisksAreNeverTouched(t *testing.T) {
	d := guestDisks(t)
	open, bound, swap, foreign, free := d[0], d[1], d[2], d[3], d[4]
	const vg, foreignVG = "ginuse", "foreignvg"
	g := newGuest(t, []string{vg, foreignVG}, d[:5])

	g.sh("lvm", "vgcreate", "-y", foreignVG, foreign)
	g.sh("mkswap", swap)
	g.sh("swapon", swap)
	t.Cleanup(func() { g.try("swapoff", swap) })
	node := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(node, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	g.sh("mount", "--bind", bound, node)
	t.Cleanup(func() { g.try("umount", node) })
	holder := osexec.Command("sh", "-c", "exec 3<"+open+"; exec sleep 600")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	g.t.Logf("mountinfo of the bind mount: %s", g.sh("grep", "-F", node, "/proc/self/mountinfo"))

	busy := []string{open, bound, swap, foreign}
	before := map[string]string{}
	for _, dev := range busy {
		before[dev] = g.checksum(dev)
	}

	g.disks.visible = d[:5]
	out := g.reconcile(vgmanager.Input{Name: vg, NodeName: "guest", Spec: lvmv1alpha1.LVMVolumeGroupSpec{
		Default:               true,
		DeviceDiscoveryPolicy: lvmv1alpha1.DeviceDiscoveryPolicyDynamic,
		ThinPoolConfig:        &lvmv1alpha1.ThinPoolConfig{Name: "pool", SizePercent: 90, OverprovisionRatio: 10},
	}})
	if out.Status.Status != lvmv1alpha1.VGStatusReady || !sortedEqual(out.Status.Devices, []string{free}) {
		t.Fatalf("status %+v, want Ready on %s only", out.Status, free)
	}
	want := map[string]string{
		open:    "is held open by pid",
		bound:   "is mounted at " + node,
		swap:    "is an active swap area",
		foreign: "is a PV of another volume group: " + foreignVG,
	}
	for dev, w := range want {
		if r := excludedReasons(out.Status, dev); !strings.Contains(r, w) {
			t.Errorf("%s excluded with %q, want a reason containing %q", dev, r, w)
		}
	}

	// The wipe, with the opt-in, refuses each of them too.
	for _, dev := range busy[:3] {
		err := g.disks.Wipe(t.Context(), dev, devices.ForceWipeDevicesAndDestroyAllData(true))
		if !errors.Is(err, devices.ErrBusy) {
			t.Errorf("wipe %s: %v, want ErrBusy", dev, err)
		} else {
			t.Logf("wipe refused: %v", err)
		}
	}

	for _, dev := range busy {
		if after := g.checksum(dev); after != before[dev] {
			t.Errorf("%s changed: %s -> %s", dev, before[dev], after)
		}
	}
}

// checksum hashes the first and the last 128 MiB of dev, where anything lvms or lvm2 writes lands (PV
// labels and metadata, pool metadata, signatures, a backup GPT); hashing all 2 GiB of every disk would
// take minutes in the guest.
func (g *guest) checksum(dev string) string {
	g.t.Helper()
	return g.sh("sh", "-c", "{ head -c 134217728 "+dev+"; tail -c 134217728 "+dev+"; } | sha256sum")
}
