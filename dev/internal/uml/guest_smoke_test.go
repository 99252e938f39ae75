//go:build guest

package uml

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/testing/umlguest"
)

// guestRun runs a command in the guest, logs it with its duration and fails the test on error.
func guestRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	start := time.Now()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s (%s)", name, strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// guestDisks returns the standard layout's disks from the environment hack/test-lvm.sh sets.
func guestDisks(t *testing.T) (rw []string, ro string) {
	t.Helper()
	if os.Getenv(umlguest.EnvGuest) != "1" {
		t.Fatalf("%s is not 1: this binary must run inside a UML guest (hack/test-lvm.sh)", umlguest.EnvGuest)
	}
	rw = strings.Split(os.Getenv(umlguest.EnvGuestDisks), ",")
	ro = os.Getenv(umlguest.EnvGuestRODisk)
	if len(rw) != umlguest.StandardRWDisks || ro == "" {
		t.Fatalf(
			"%s=%q %s=%q: want the standard layout",
			umlguest.EnvGuestDisks,
			os.Getenv(umlguest.EnvGuestDisks),
			umlguest.EnvGuestRODisk,
			ro,
		)
	}
	return rw, ro
}

// TestGuestSmoke proves the guest gives real device-mapper and lvm2: thin pools, thin LVs,
// RAID1, filesystems on LVs, and a read-only disk.
func TestGuestSmoke(t *testing.T) {
	rw, ro := guestDisks(t)
	if _, err := os.Stat("/dev/mapper/control"); err != nil {
		t.Fatalf("device-mapper control node: %v", err)
	}
	targets := guestRun(t, "dmsetup", "targets")
	for _, want := range []string{"thin-pool", "thin", "snapshot", "raid"} {
		if !strings.Contains(targets, want+" ") {
			t.Errorf("dmsetup targets lacks %s:\n%s", want, targets)
		}
	}
	if got := strings.TrimSpace(guestRun(t, "blockdev", "--getro", ro)); got != "1" {
		t.Errorf("blockdev --getro %s = %q, want 1", ro, got)
	}
	if got := strings.TrimSpace(guestRun(t, "blockdev", "--getro", rw[0])); got != "0" {
		t.Errorf("blockdev --getro %s = %q, want 0", rw[0], got)
	}
	t.Logf("lvm2 in the guest:\n%s", guestRun(t, "lvm", "version"))

	const vg = "smokevg"
	pvs := rw[:2]
	guestRun(t, "pvcreate", append([]string{"-y"}, pvs...)...)
	t.Cleanup(func() { guestCleanup(t, vg, pvs) })
	guestRun(t, "vgcreate", append([]string{vg}, pvs...)...)

	guestRun(t, "lvcreate", "-T", "-L", "256M", "-n", "pool", vg)
	start := time.Now()
	guestRun(t, "lvcreate", "-T", "-V", "1G", "-n", "thin1", vg+"/pool")
	t.Logf("lvcreate thin LV took %s", time.Since(start).Round(time.Millisecond))
	checkFilesystem(t, "/dev/"+vg+"/thin1")

	guestRun(t, "lvcreate", "-y", "--type", "raid1", "-m", "1", "-L", "32M", "-n", "mirror", vg)
	lvs := guestRun(t, "lvs", "-a", "--noheadings", "-o", "lv_name,lv_attr,segtype", vg)
	t.Logf("LVs:\n%s", lvs)
	for _, want := range []string{"thin1", "pool", "mirror"} {
		if !strings.Contains(lvs, want+" ") {
			t.Errorf("lvs lacks %s", want)
		}
	}
	if active := guestRun(
		t,
		"lvs",
		"--noheadings",
		"-o",
		"lv_active,segtype",
		vg+"/mirror",
	); !strings.Contains(active, "active") ||
		!strings.Contains(active, "raid1") {
		t.Errorf("raid1 LV not active: %q", active)
	}
}

// checkFilesystem makes ext4 on dev, mounts it, writes a file and reads it back.
func checkFilesystem(t *testing.T, dev string) {
	t.Helper()
	guestRun(t, "mkfs.ext4", "-q", dev)
	mnt := t.TempDir()
	guestRun(t, "mount", dev, mnt)
	mounted := true
	defer func() {
		if mounted {
			guestRun(t, "umount", mnt)
		}
	}()
	data := bytes.Repeat([]byte("lvms-guest-smoke\n"), 4096)
	file := filepath.Join(mnt, "data")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatalf("write on %s: %v", dev, err)
	}
	guestRun(t, "umount", mnt)
	mounted = false
	guestRun(t, "mount", "-o", "ro", dev, mnt)
	mounted = true
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back from %s after remount: %d bytes, %v", dev, len(got), err)
	}
}

// guestCleanup removes the VG and PVs; failures fail the test (the disks are reused by later
// tests in the same guest).
func guestCleanup(t *testing.T, vg string, pvs []string) {
	if out, err := exec.Command("vgremove", "-y", "-f", vg).CombinedOutput(); err != nil {
		t.Errorf("vgremove %s: %v\n%s", vg, err, out)
	}
	args := append([]string{"-y", "-ff"}, pvs...)
	if out, err := exec.Command("pvremove", args...).CombinedOutput(); err != nil {
		t.Errorf("pvremove: %v\n%s", err, out)
	}
}
