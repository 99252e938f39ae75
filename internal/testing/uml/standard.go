package uml

import (
	"os"
	"strings"
)

// The standard disk layout every guest test package gets from hack/test-lvm.sh. Guest tests
// (//go:build guest) rely on it through the environment variables below; do not change it
// without changing them.
const (
	// StandardRWDisks read-write disks of StandardRWDiskSize each: /dev/ubda ... /dev/ubdg.
	StandardRWDisks    = 7
	StandardRWDiskSize = 2 << 30
	// One read-only disk of StandardRODiskSize after them: /dev/ubdh.
	StandardRODiskSize = 1 << 30

	// EnvGuest is "1" in every guest.
	EnvGuest = "LVMS_GUEST"
	// EnvGuestDisks lists the read-write disks, comma-separated.
	EnvGuestDisks = "LVMS_GUEST_DISKS"
	// EnvGuestRODisk names the read-only disk.
	EnvGuestRODisk = "LVMS_GUEST_RO_DISK"
	// EnvGuestOut names a directory shared read-write with the host.
	EnvGuestOut = "LVMS_GUEST_OUT"
)

// StandardDisks returns the standard layout: StandardRWDisks read-write disks, then one
// read-only disk.
func StandardDisks() []Disk {
	disks := make([]Disk, 0, StandardRWDisks+1)
	for range StandardRWDisks {
		disks = append(disks, Disk{Size: StandardRWDiskSize})
	}
	return append(disks, Disk{Size: StandardRODiskSize, ReadOnly: true})
}

// StandardEnv returns the environment describing StandardDisks to the guest command.
func StandardEnv() map[string]string {
	rw := make([]string, StandardRWDisks)
	for i := range rw {
		rw[i] = DiskDevice(i)
	}
	return map[string]string{
		EnvGuest:       "1",
		EnvGuestDisks:  strings.Join(rw, ","),
		EnvGuestRODisk: DiskDevice(StandardRWDisks),
		"PATH":         guestPath,
	}
}

// Fataler is the part of testing.TB GuestDisks needs.
type Fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// GuestDisks returns n read-write disks of the standard layout from EnvGuestDisks, skipping the
// first skip of them. Outside a guest, or with fewer disks, it fails tb.
func GuestDisks(tb Fataler, skip, n int) []string {
	tb.Helper()
	env := os.Getenv(EnvGuestDisks)
	if env == "" {
		tb.Fatalf("%s is not set: guest tests must run inside the UML guest (hack/test-lvm.sh)", EnvGuestDisks)
		return nil
	}
	disks := strings.Split(env, ",")
	if len(disks) < skip+n {
		tb.Fatalf("need %d guest disks, have %v", skip+n, disks)
		return nil
	}
	return disks[skip : skip+n]
}
