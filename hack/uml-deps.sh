#!/usr/bin/env bash
# Installs what the User-mode Linux (UML) test harness needs: the UML kernel (linux.uml and its
# modules), lvm2 and thin-provisioning-tools, filesystem tools, kmod (modprobe/insmod in the guest)
# and gcc/libc headers (to build the xstate ptrace shim, see hack/uml/xstate-shim.c).
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
)
# Packages without a command of their own to probe, checked with dpkg.
EXTRA_PKGS=(libc6-dev)

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
want=(user-mode-linux lvm2 thin-provisioning-tools xfsprogs e2fsprogs kmod gcc libc6-dev util-linux fdisk btrfs-progs)
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
apt-get install -y --no-install-recommends "${install[@]}" >&2

for cmd in "${!NEED[@]}"; do
	if ! have_cmd "${cmd}"; then
		[[ "${cmd}" == mkfs.btrfs ]] && continue
		log "command ${cmd} still missing after install"
		exit 1
	fi
done
log "done"
