#!/bin/sh
# Init (PID 1) of a User-mode Linux guest started by dev/internal/uml.
#
# The guest's root is the host's "/" over hostfs, read-only. Stage 1 puts a tmpfs overlay on top
# and pivots into it; stage 2 mounts the pseudo filesystems, loads the device-mapper modules
# (module autoload does not work here), writes an lvm.conf for a system without udev, mounts the
# per-run host directory (and any shared directories) read-write at their host paths, runs the
# command from the run spec, prints "GUEST-EXIT=<rc>" (UML itself always exits 0) and powers off.
#
# Input: the kernel command line sets LVMS_UML_RUNDIR=<host dir>; that directory holds spec.sh,
# written by the host (see dev/internal/uml), which calls the functions `share` and `workdir`
# defined below and ends with `set -- <command and args>`.
# Markers on the console: GUEST-START (command about to run), GUEST-EXIT=<rc>,
# GUEST-SETUP-FAILED: <what> (the command never ran).

PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH

power_off() {
	sync
	poweroff -f >/dev/null 2>&1
	echo o >/proc/sysrq-trigger 2>/dev/null
	while :; do sleep 1; done
}

die() {
	echo "GUEST-SETUP-FAILED: $*"
	power_off
}

kver=$(uname -r)
moddir=/usr/lib/uml/modules/$kver

stage1() {
	# mount(8) wants /proc for its bookkeeping; the hostfs /proc directory is only a mount point.
	mount -t proc proc /proc || die "mount /proc (stage 1)"
	[ -d "$moddir" ] || die "no UML modules in $moddir"
	insmod "$moddir/kernel/fs/overlayfs/overlay.ko" || die "insmod overlay"
	mount -t tmpfs -o mode=0755 tmpfs /run || die "mount tmpfs for the overlay"
	mkdir -p /run/ov/upper /run/ov/work /run/ov/root || die "overlay dirs"
	mount -t overlay overlay -o lowerdir=/,upperdir=/run/ov/upper,workdir=/run/ov/work \
		/run/ov/root || die "mount overlay"
	umount /proc
	# pivot_root, not chroot: the overlay must be the mount namespace's root, or a process that
	# enters it (nsenter -t 1 -m from a hostPID pod) lands in the read-only host tree.
	cd /run/ov/root || die "cd into the overlay"
	mkdir -p .oldroot || die "mkdir .oldroot"
	pivot_root . .oldroot || die "pivot_root into the overlay"
	LVMS_UML_STAGE=2 exec chroot . /bin/sh "$0"
	die "exec stage 2 in the overlay"
}

mount_pseudo() {
	mount -t proc proc /proc || die "mount /proc"
	mount -t sysfs sysfs /sys || die "mount /sys"
	mount -t devtmpfs devtmpfs /dev || die "mount /dev"
	mkdir -p /dev/pts /dev/shm
	mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts || die "mount /dev/pts"
	mount -t tmpfs -o mode=1777 tmpfs /dev/shm || die "mount /dev/shm"
	# /run is fresh: the host's holds its own lvm locks and sockets. /tmp stays the overlay's
	# view of the host's /tmp (binaries built there remain visible; writes stay in the guest).
	mount -t tmpfs -o mode=0755 tmpfs /run || die "mount /run"
	mkdir -p /run/lock/lvm /run/lvm
	hostname lvms-guest 2>/dev/null
	ip link set lo up 2>/dev/null
}

load_modules() {
	mkdir -p "/lib/modules/$kver" || die "mkdir /lib/modules/$kver"
	mount --bind "$moddir" "/lib/modules/$kver" || die "bind modules"
	for m in dm-mod dm-bufio dm-bio-prison dm-persistent-data dm-thin-pool dm-snapshot; do
		modprobe "$m" || die "modprobe $m"
	done
	# RAID, mirror, cache and integrity LVs, and dm-crypt with the ciphers of cryptsetup's LUKS2
	# default (aes-xts-plain64; aes and sha256 are built in) and the kernel crypto API cryptsetup uses
	# for its keyslots (algif_skcipher); optional, the UML package may lack some.
	for m in dm-zero dm-mirror dm-log md-mod raid0 raid1 raid10 raid456 dm-raid \
		dm-cache dm-cache-smq dm-writecache dm-integrity loop \
		dm-crypt xts algif_skcipher algif_hash; do
		modprobe -q "$m" 2>/dev/null || true
	done
}

write_lvm_conf() {
	mkdir -p /etc/lvm
	cat >/etc/lvm/lvm.conf <<'EOF' || die "write lvm.conf"
# Written by hack/uml/guest-init.sh: this guest has no udev.
devices {
	obtain_device_list_from_udev = 0
	external_device_info_source = "none"
	use_devicesfile = 0
}
activation {
	udev_sync = 0
	udev_rules = 0
	verify_udev_operations = 1
	monitoring = 0
}
EOF
}

# mount_host DIR: mounts the host directory DIR read-write at the same path in the guest.
mount_host() {
	mkdir -p "$1" || die "mkdir $1"
	mount -t hostfs -o "$1" hostfs "$1" || die "mount host dir $1"
}

# Functions called by spec.sh.
share() { mount_host "$1"; }
workdir() { guest_workdir=$1; }

stage2() {
	# The old root (the host's tree, read-only) stays the overlay's lower layer; detach its view.
	umount -l /.oldroot 2>/dev/null
	mount_pseudo
	load_modules
	write_lvm_conf
	[ -n "${LVMS_UML_RUNDIR:-}" ] || die "LVMS_UML_RUNDIR not set on the kernel command line"
	mount_host "$LVMS_UML_RUNDIR"
	guest_workdir=/
	. "$LVMS_UML_RUNDIR/spec.sh" || die "source $LVMS_UML_RUNDIR/spec.sh"
	cd "$guest_workdir" || die "cd $guest_workdir"
	echo "GUEST-START"
	"$@" </dev/null
	rc=$?
	sync
	echo "GUEST-EXIT=$rc"
	power_off
}

if [ "${LVMS_UML_STAGE:-1}" = 1 ]; then
	stage1
else
	stage2
fi
