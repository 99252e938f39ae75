//go:build guest

package devices_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// TestGuestDiskBehindALoopDevice sets up a loop device over a whole disk at an offset, with an ext4
// on the loop device mounted, and a second one over another disk with nothing on it, as an admin
// might. Nothing the kernel offers shows the disks in use (no holder link, an O_EXCL open succeeds, no
// signature at offset 0 of the offset one); the filter must still refuse both disks, refuse the
// loop devices (the same storage offered a second time), and Wipe must refuse the disk.
func TestGuestDiskBehindALoopDevice(t *testing.T) {
	disks := strings.Split(os.Getenv("LVMS_GUEST_DISKS"), ",")
	if len(disks) < 2 {
		t.Fatal("LVMS_GUEST_DISKS not set: guest tests must run inside the UML guest (hack/test-lvm.sh)")
	}
	offsetDisk, plainDisk := disks[0], disks[1]
	g := newGuest(t)
	mnt := t.TempDir()
	var loops []string
	t.Cleanup(func() {
		_ = unix.Unmount(mnt, 0)
		for _, l := range loops {
			g.try("losetup", "-d", l)
		}
		g.try("wipefs", "--all", "--force", offsetDisk, plainDisk)
	})
	out, err := exec.Run(t.Context(), g.exec, "losetup", "-f", "--show", "-o", "1048576", offsetDisk)
	if err != nil {
		t.Fatal(err)
	}
	withFS := strings.TrimSpace(string(out))
	loops = append(loops, withFS)
	g.sh("", "mkfs.ext4", "-q", "-F", withFS)
	g.sh("", "mount", withFS, mnt)
	blank := g.losetup(plainDisk)
	loops = append(loops, blank)

	// The premise: without looking at the loop devices, the disks look free.
	for _, d := range []string{offsetDisk, plainDisk} {
		name := strings.TrimPrefix(d, "/dev/")
		if holders, _ := os.ReadDir("/sys/class/block/" + name + "/holders"); len(holders) != 0 {
			t.Fatalf("%s has holders %v: the test proves nothing", d, holders)
		}
		f, err := os.OpenFile(d, os.O_RDONLY|unix.O_EXCL, 0)
		if err != nil {
			t.Fatalf("%s cannot be opened exclusively (%v): the test proves nothing", d, err)
		}
		_ = f.Close()
	}
	if sig := g.signatures(offsetDisk); sig != "" {
		t.Fatalf("%s shows signature %q at offset 0: the test proves nothing", offsetDisk, sig)
	}

	got := g.plan("lonew")
	for disk, loop := range map[string]string{offsetDisk: withFS, plainDisk: blank} {
		want := "is the backing device of loop device " + loop + ": detach it (losetup -d) or choose another disk"
		if !hasReason(got[disk], want) {
			t.Errorf("%s: reasons %q, want %q", disk, got[disk], want)
		}
		want = "is a loop device over block device " + disk + ": use that device itself (detach the loop first)"
		if !hasReason(got[loop], want) {
			t.Errorf("%s: reasons %q, want %q", loop, got[loop], want)
		}
	}
	var usable []string
	for dev, r := range got {
		if len(r) == 0 && slices.Contains([]string{offsetDisk, plainDisk, withFS, blank}, dev) {
			usable = append(usable, dev)
		}
	}
	if len(usable) > 0 {
		t.Errorf("offered as usable: %v", usable)
	}
	err = g.host.Wipe(t.Context(), offsetDisk, devices.ForceWipeDevicesAndDestroyAllData(true))
	if !errors.Is(err, devices.ErrBusy) {
		t.Fatalf("wipe of %s under a mounted loop device: %v, want refused as busy", offsetDisk, err)
	}
	t.Logf("wipe refused: %v", err)
}
