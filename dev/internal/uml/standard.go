package uml

import (
	"strings"

	"github.com/lvm-operator/lvm-operator/internal/testing/umlguest"
)

// StandardDisks returns the standard layout of guest tests (internal/testing/guest):
// umlguest.StandardRWDisks read-write disks, then one read-only disk.
func StandardDisks() []Disk {
	disks := make([]Disk, 0, umlguest.StandardRWDisks+1)
	for range umlguest.StandardRWDisks {
		disks = append(disks, Disk{Size: umlguest.StandardRWDiskSize})
	}
	return append(disks, Disk{Size: umlguest.StandardRODiskSize, ReadOnly: true})
}

// StandardEnv returns the environment describing StandardDisks to the guest command.
func StandardEnv() map[string]string {
	rw := make([]string, umlguest.StandardRWDisks)
	for i := range rw {
		rw[i] = DiskDevice(i)
	}
	return map[string]string{
		umlguest.EnvGuest:       "1",
		umlguest.EnvGuestDisks:  strings.Join(rw, ","),
		umlguest.EnvGuestRODisk: DiskDevice(umlguest.StandardRWDisks),
		"PATH":                  guestPath,
	}
}
