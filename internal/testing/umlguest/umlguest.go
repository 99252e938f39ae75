// Package umlguest is what a test running inside a User-mode Linux guest knows of the guest: the
// standard disk layout every guest test package gets (hack/test-lvm.sh boots the guests with the
// dev tooling's launcher, dev/internal/uml) and the environment that describes it. Guest tests
// (//go:build guest) rely on it; do not change it without changing the launcher.
package umlguest

import (
	"os"
	"strings"
)

// The standard disk layout.
const (
	// StandardRWDisks read-write disks of StandardRWDiskSize each: /dev/ubda ... /dev/ubdg.
	StandardRWDisks    = 7
	StandardRWDiskSize = 2 << 30
	// One read-only disk of StandardRODiskSize after them: /dev/ubdh.
	StandardRODiskSize = 1 << 30
)

// The environment of a guest.
const (
	// EnvGuest is "1" in every guest.
	EnvGuest = "LVMS_GUEST"
	// EnvGuestDisks lists the read-write disks, comma-separated.
	EnvGuestDisks = "LVMS_GUEST_DISKS"
	// EnvGuestRODisk names the read-only disk.
	EnvGuestRODisk = "LVMS_GUEST_RO_DISK"
	// EnvGuestOut names a directory shared read-write with the host.
	EnvGuestOut = "LVMS_GUEST_OUT"
)

// Fataler is the part of testing.TB Disks needs.
type Fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Disks returns n read-write disks of the standard layout from EnvGuestDisks, skipping the first
// skip of them. Outside a guest, or with fewer disks, it fails tb.
func Disks(tb Fataler, skip, n int) []string {
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
