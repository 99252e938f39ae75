// Package uml boots throw-away User-mode Linux (UML) guests to run real lvm2 with device-mapper,
// which the host kernel of our build machines lacks.
//
// A guest is Debian's linux.uml (package user-mode-linux, installed by hack/uml-deps.sh) booted
// with the host's "/" as a read-only hostfs root under a tmpfs overlay, so it runs the host's lvm2,
// mkfs and statically linked Go binaries. hack/uml/guest-init.sh is its init: it mounts the
// pseudo filesystems, loads the device-mapper, thin, snapshot and RAID modules, writes an lvm.conf
// for a system without udev, runs the requested command and prints "GUEST-EXIT=<rc>" before
// powering off; [Run] turns that marker into [Result.ExitCode] (UML itself always exits 0).
//
// Guest layout, as seen by the command:
//
//   - Disk i of [Options.Disks] is the block device /dev/ubd<a+i>: the first is /dev/ubda, the
//     second /dev/ubdb, and so on (at most 16). Disks are sparse files in a per-run temporary
//     directory, deleted afterwards; a ReadOnly disk is attached read-only.
//   - [StandardDisks] and [StandardEnv] describe the layout hack/test-lvm.sh gives every guest
//     test package: seven read-write 2 GiB disks listed in LVMS_GUEST_DISKS, one read-only 1 GiB
//     disk in LVMS_GUEST_RO_DISK, and LVMS_GUEST=1.
//   - The environment is empty apart from PATH, HOME, LVMS_GUEST=1, LVMS_GUEST_OUT and
//     [Options.Env]. LVMS_GUEST_OUT names a directory shared read-write with the host
//     ([Options.OutDir], or a temporary one).
//   - Each directory in [Options.SharedDirs] is mounted read-write at the same path as on the
//     host. Everything else of the host, /tmp included, is visible at its host path, and writes
//     to it stay in the guest's overlay; only /run and /dev/shm are fresh tmpfs. So a command
//     binary built anywhere on the host runs as is, and testdata is read in place.
//   - The console (the command's stdout and stderr) is streamed to [Options.Stdout].
//   - [Options.SerialLines] hands host files (e.g. one end of a socketpair) to the guest as
//     serial lines /dev/ttyS<n>, a transport for talking to agents inside the guest.
//
// On CPUs with AMX, UML 6.1 hands ptrace an XSAVE buffer smaller than the host's and every guest
// process dies; Run always preloads hack/uml/xstate-shim.c (built with gcc into the user's cache
// directory), which fixes that and only forwards calls elsewhere.
//
// Runs are independent: each has its own umid, uml_dir and temporary directory, so several may
// run in parallel. Run kills the whole UML process group on timeout and cleans up afterwards.
package uml
