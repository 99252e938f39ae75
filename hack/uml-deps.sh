#!/usr/bin/env bash
# Installs what the User-mode Linux (UML) test harness needs: the UML kernel (linux.uml and its
# modules), lvm2 and thin-provisioning-tools, filesystem tools, cryptsetup (encrypted volumes),
# kmod (modprobe/insmod in the guest) and gcc/libc headers (to build the xstate ptrace shim, see
# hack/uml/xstate-shim.c); and what the dev cluster's real nodes run inside the guests
# (hack/uml/real-node.sh): containerd (with ctr and containerd-shim-runc-v2), crun, the CNI plugins
# (bridge, host-local, loopback) and iptables (iptables-legacy for the Service DNAT). Nothing of it
# runs on the host: the guests see the host's / read-only and run these binaries from there.
#
# Idempotent and fast when everything is present: it only runs `apt-get update` and
# `apt-get install` when a command is missing. All output goes to stderr.
# See /work/shared/PROVING-GROUND.md §B for why UML.
set -euo pipefail

log() { echo "uml-deps: $*" >&2; }

# command -> Debian package providing it.
declare -A NEED=(
	[linux.uml]=user-mode-linux
	[lvm]=lvm2
	[thin_check]=thin-provisioning-tools
	[mkfs.xfs]=xfsprogs
	[mkfs.ext4]=e2fsprogs
	[modprobe]=kmod
	[gcc]=gcc
	[blockdev]=util-linux
	[sfdisk]=fdisk
	[mkfs.btrfs]=btrfs-progs
	[cryptsetup]=cryptsetup-bin
	[containerd]=containerd
	[crun]=crun
	[iptables-legacy]=iptables
)
# Packages without a command of their own to probe (the CNI plugins live in /usr/lib/cni; GNU time,
# which the thin-metadata benchmark runs, is shadowed by the shell keyword),
# checked with dpkg.
EXTRA_PKGS=(libc6-dev containernetworking-plugins time)

have_cmd() {
	PATH="${PATH}:/usr/sbin:/sbin" command -v "$1" >/dev/null 2>&1
}

have_pkg() {
	[[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

# Remembers that apt has no btrfs-progs here, so its absence does not trigger apt on every run.
NO_BTRFS_MARK="${XDG_CACHE_HOME:-$HOME/.cache}/lvms/uml/no-btrfs-progs"

missing=()
for cmd in "${!NEED[@]}"; do
	[[ "${cmd}" == mkfs.btrfs && -f "${NO_BTRFS_MARK}" ]] && continue
	have_cmd "${cmd}" || missing+=("${NEED[${cmd}]}")
done
for pkg in "${EXTRA_PKGS[@]}"; do
	have_pkg "${pkg}" || missing+=("${pkg}")
done

if ((${#missing[@]} == 0)); then
	exit 0
fi

if [[ "$(id -u)" != 0 ]]; then
	log "missing packages: ${missing[*]}; run this script as root (needs apt-get install)"
	exit 1
fi

log "missing: ${missing[*]}; running apt-get update"
export DEBIAN_FRONTEND=noninteractive
apt-get update >&2

# Install the full set (cheap when most are present), keeping only packages apt knows.
want=(user-mode-linux lvm2 thin-provisioning-tools xfsprogs e2fsprogs kmod gcc libc6-dev util-linux fdisk btrfs-progs
	cryptsetup-bin containerd crun containernetworking-plugins iptables)
install=()
for pkg in "${want[@]}"; do
	candidate="$(apt-cache policy "${pkg}" 2>/dev/null | awk '/Candidate:/ {print $2}')"
	if [[ -z "${candidate}" || "${candidate}" == "(none)" ]]; then
		if [[ "${pkg}" == btrfs-progs ]]; then
			log "btrfs-progs not available from apt; skipping it"
			mkdir -p "$(dirname "${NO_BTRFS_MARK}")" && touch "${NO_BTRFS_MARK}"
			continue
		fi
		log "package ${pkg} has no install candidate in apt"
		exit 1
	fi
	install+=("${pkg}")
done

log "installing: ${install[*]}"
# containerd is for the guests only: keep its package from starting the service on the host
# (policy-rc.d exit 101 = "action forbidden", honoured by invoke-rc.d and deb-systemd-invoke).
policy=/usr/sbin/policy-rc.d
if [[ ! -e "${policy}" ]]; then
	printf '#!/bin/sh\nexit 101\n' >"${policy}"
	chmod 755 "${policy}"
	trap 'rm -f "${policy}"' EXIT
fi
apt-get install -y --no-install-recommends "${install[@]}" >&2

for cmd in "${!NEED[@]}"; do
	if ! have_cmd "${cmd}"; then
		[[ "${cmd}" == mkfs.btrfs ]] && continue
		log "command ${cmd} still missing after install"
		exit 1
	fi
done
log "done"
