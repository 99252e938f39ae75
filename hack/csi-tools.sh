#!/usr/bin/env bash
# Builds the pinned Kubernetes CSI tools that `make sanity` and the local dev cluster use
# (csi-sanity, csi-provisioner, csi-resizer, csi-snapshotter, snapshot-controller,
# csi-snapshot-metadata and its example clients snapshot-metadata-lister and
# snapshot-metadata-verifier) from the Go module proxy into a per-version cache directory outside
# the repository, copies the VolumeSnapshot and SnapshotMetadataService CRDs next to them, reuses
# everything already built, and prints that directory as the LAST line of stdout. Progress goes to
# stderr.
#
# Layout of the printed directory:
#   csi-sanity csi-provisioner csi-resizer csi-snapshotter snapshot-controller
#   csi-snapshot-metadata snapshot-metadata-lister snapshot-metadata-verifier
#   snapshot-crds/*.yaml    config/crd of external-snapshotter/client (VolumeSnapshot*, VolumeGroupSnapshot*)
#   snapshot-metadata-crds/*.yaml  client/config/crd of external-snapshot-metadata (SnapshotMetadataService)
#   .complete-<tool>        written after <tool> was built and answered --version/-h
#
# Why wrapper modules: each tool pins its own k8s.io versions and some upstream go.mod files carry
# replace directives (external-snapshotter: "client/v8 => ./client"; external-provisioner: one
# per k8s.io staging module), which `go install pkg@version` refuses. Tools are built in
# throw-away main modules under ${CACHE_ROOT}/csi-tools-src/<group>-<key>, one per build GROUP:
# the go.mod of the group's base module with the module line renamed, local "=> ./dir" replaces
# pointed at the published module of the same version, and a require of every upstream module of
# the group (see shared PROVING-GROUND §A). One `go build` per group compiles the dependencies the
# group's tools share (client-go, grpc, ...) once instead of once per tool: the tools on Kubernetes
# 0.37 (csi-sanity, csi-resizer, csi-snapshotter, snapshot-controller) are one group;
# csi-provisioner v6.3.0 is built alone because it does not compile against client-go 0.37
# (CSIStorageCapacity informer types changed). external-provisioner v6.4.0 needs a dependency the
# proxy lacks, hence v6.3.0. external-snapshot-metadata (the changed-block-tracking sidecar and
# its example clients) is a group of its own on the Kubernetes 0.34 its go.mod pins; its
# "client => ./client" replace becomes client v0.1.0 (GROUP_LOCAL_VERSION): the proxy does not
# serve client v0.2.0, and the release's client/ differs from client/v0.1.0 only in its go.mod.
#
# Build flags are fixed (CGO_ENABLED=0 -trimpath, the same as hack/kube-assets.sh) so warm
# rebuilds hit the Go build cache.
set -euo pipefail

CSI_SANITY_VERSION="${CSI_SANITY_VERSION:-v5.6.0}"
CSI_PROVISIONER_VERSION="${CSI_PROVISIONER_VERSION:-v6.3.0}"
CSI_RESIZER_VERSION="${CSI_RESIZER_VERSION:-v2.3.0}"
CSI_SNAPSHOTTER_VERSION="${CSI_SNAPSHOTTER_VERSION:-v8.7.0}"
SNAPSHOT_METADATA_VERSION="${SNAPSHOT_METADATA_VERSION:-v0.2.0}"

CACHE_ROOT="${LVMS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms}"
KEY="sanity-${CSI_SANITY_VERSION}_provisioner-${CSI_PROVISIONER_VERSION}"
KEY+="_resizer-${CSI_RESIZER_VERSION}_snapshotter-${CSI_SNAPSHOTTER_VERSION}"
KEY+="_snapshot-metadata-${SNAPSHOT_METADATA_VERSION}"
OUT="${CACHE_ROOT}/csi-tools/${KEY}"
SRC="${CACHE_ROOT}/csi-tools-src"

SNAPSHOT_METADATA_MODULE="github.com/kubernetes-csi/external-snapshot-metadata"
# tool|upstream module|version|package path inside the module|version flag|build group
TOOLS=(
	"csi-sanity|github.com/kubernetes-csi/csi-test/v5|${CSI_SANITY_VERSION}|cmd/csi-sanity|-version|k8s"
	"csi-resizer|github.com/kubernetes-csi/external-resizer/v2|${CSI_RESIZER_VERSION}|cmd/csi-resizer|--version|k8s"
	"csi-snapshotter|github.com/kubernetes-csi/external-snapshotter/v8|${CSI_SNAPSHOTTER_VERSION}|cmd/csi-snapshotter|--version|k8s"
	"snapshot-controller|github.com/kubernetes-csi/external-snapshotter/v8|${CSI_SNAPSHOTTER_VERSION}|cmd/snapshot-controller|--version|k8s"
	"csi-provisioner|github.com/kubernetes-csi/external-provisioner/v6|${CSI_PROVISIONER_VERSION}|cmd/csi-provisioner|--version|provisioner"
	"csi-snapshot-metadata|${SNAPSHOT_METADATA_MODULE}|${SNAPSHOT_METADATA_VERSION}|cmd/csi-snapshot-metadata|--version|snapshot-metadata"
	"snapshot-metadata-lister|${SNAPSHOT_METADATA_MODULE}|${SNAPSHOT_METADATA_VERSION}|examples/snapshot-metadata-lister|-h|snapshot-metadata"
	"snapshot-metadata-verifier|${SNAPSHOT_METADATA_MODULE}|${SNAPSHOT_METADATA_VERSION}|examples/snapshot-metadata-verifier|-h|snapshot-metadata"
)
# group -> "base module|version": the go.mod the group's wrapper module starts from (its replaces
# pin the Kubernetes staging modules the group builds against).
declare -A GROUP_BASE=(
	[k8s]="github.com/kubernetes-csi/external-snapshotter/v8|${CSI_SNAPSHOTTER_VERSION}"
	[provisioner]="github.com/kubernetes-csi/external-provisioner/v6|${CSI_PROVISIONER_VERSION}"
	[snapshot-metadata]="${SNAPSHOT_METADATA_MODULE}|${SNAPSHOT_METADATA_VERSION}"
)
# group -> version that the base go.mod's local "=> ./dir" replaces point at (default: the base's).
SNAPSHOT_METADATA_CLIENT_VERSION="${SNAPSHOT_METADATA_CLIENT_VERSION:-v0.1.0}"
declare -A GROUP_LOCAL_VERSION=(
	[snapshot-metadata]="${SNAPSHOT_METADATA_CLIENT_VERSION}"
)
GROUPS_IN_ORDER=(k8s provisioner snapshot-metadata)
CRD_MODULE="github.com/kubernetes-csi/external-snapshotter/client/v8"
# The SnapshotMetadataService CRD is in the client module (client/config/crd).
SNAPSHOT_METADATA_CRD_MODULE="${SNAPSHOT_METADATA_MODULE}/client"

log() { echo "csi-tools: $*" >&2; }

# gomod_of prints the path of the downloaded go.mod of module@version (run inside a module dir).
gomod_of() { # module version
	go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p'
}

# dir_of prints the extracted module directory of module@version (run inside a module dir).
dir_of() { # module version
	go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

# write_wrapper writes the wrapper module of one build group into $1: the base module's go.mod
# rewritten, a require of every "module version" pair after the base, and tools.go importing pkgs.
write_wrapper() { # dir group base-module base-version "mod ver"... -- pkg...
	local dir=$1 group=$2 base=$3 basever=$4 gomod localver
	localver="${GROUP_LOCAL_VERSION[${group}]:-${basever}}"
	shift 4
	mkdir -p "${dir}"
	[[ -f "${dir}/go.mod" ]] || printf 'module lvms.local/csi-tools-probe\n\ngo 1.26\n' >"${dir}/go.mod"
	gomod=$(cd "${dir}" && gomod_of "${base}" "${basever}")
	[[ -f "${gomod}" ]] || { log "cannot find go.mod of ${base}@${basever}"; return 1; }
	# Rename the module; drop toolchain and tool lines; point "X [v] => ./dir" at X@localver.
	sed -E \
		-e "s#^module .*#module lvms.local/csi-tools/${group}#" \
		-e '/^toolchain /d' \
		-e '/^tool /d' \
		-e "s#^([[:space:]]*(replace[[:space:]]+)?)([^[:space:]]+)([[:space:]]+v[^[:space:]]+)?[[:space:]]+=>[[:space:]]+\.\.?/.*#\1\3 => \3 ${localver}#" \
		"${gomod}" >"${dir}/go.mod.tmp"
	while [[ $# -gt 0 && "$1" != "--" ]]; do
		printf '\nrequire %s\n' "$1" >>"${dir}/go.mod.tmp"
		shift
	done
	shift
	mv "${dir}/go.mod.tmp" "${dir}/go.mod"
	{
		printf '//go:build tools\n\n// Package tools pins the commands this module builds.\npackage tools\n\nimport (\n'
		local pkg
		for pkg in "$@"; do printf '\t_ "%s"\n' "${pkg}"; done
		printf ')\n'
	} >"${dir}/tools.go"
}

# build_group builds every tool of one group that lacks its .complete marker, in one go build.
build_group() { # group
	local group=$1 spec tool mod ver pkg vflag g
	local -a todo=() mods=() pkgs=() ldflags=()
	for spec in "${TOOLS[@]}"; do
		IFS='|' read -r tool mod ver pkg vflag g <<<"${spec}"
		[[ "${g}" == "${group}" ]] || continue
		if [[ -f "${OUT}/.complete-${tool}" && -x "${OUT}/${tool}" ]]; then
			log "${tool} ${ver}: already built"
			continue
		fi
		todo+=("${tool}|${vflag}")
		[[ " ${mods[*]} " == *" ${mod} ${ver} "* ]] || mods+=("${mod} ${ver}")
		pkgs+=("${mod}/${pkg}")
		ldflags+=("-ldflags=${mod}/${pkg}=-s -w -X main.version=${ver} -X main.VERSION=${ver}")
	done
	[[ ${#todo[@]} -gt 0 ]] || return 0
	local base basever
	IFS='|' read -r base basever <<<"${GROUP_BASE[${group}]}"
	local dir="${SRC}/${group}-${KEY}" start=${SECONDS} tmp="${OUT}/.build.$$"
	log "group ${group}: preparing wrapper module ${dir}"
	write_wrapper "${dir}" "${group}" "${base}" "${basever}" "${mods[@]}" -- "${pkgs[@]}"
	(cd "${dir}" && go mod tidy >&2)
	log "group ${group}: building ${pkgs[*]} (minutes when the Go build cache is cold)"
	rm -rf "${tmp}"
	mkdir -p "${tmp}"
	(cd "${dir}" && CGO_ENABLED=0 go build -trimpath "${ldflags[@]}" -o "${tmp}/" "${pkgs[@]}" >&2)
	local item
	for item in "${todo[@]}"; do
		IFS='|' read -r tool vflag <<<"${item}"
		mv "${tmp}/${tool}" "${OUT}/${tool}"
		verify_tool "${tool}" "${vflag}"
		touch "${OUT}/.complete-${tool}"
	done
	rm -rf "${tmp}"
	log "group ${group}: built in $((SECONDS - start)) s"
}

# verify_tool runs the binary with its version flag and shows the first line it prints.
verify_tool() { # tool flag
	local out
	if ! out=$("${OUT}/$1" "$2" 2>&1); then
		log "$1 $2 failed: ${out}"
		return 1
	fi
	log "$1 $2: $(head -1 <<<"${out}")"
}

# copy_crds copies the CRDs under config/crd of module@version's zip into ${OUT}/<dest>.
copy_crds() { # dest module version
	local crds="${OUT}/$1" mod=$2 ver=$3
	if [[ -f "${crds}/.complete" ]]; then
		log "CRDs of ${mod}: ${crds}"
		return 0
	fi
	local probe="${SRC}/crd-probe" dir
	mkdir -p "${probe}"
	[[ -f "${probe}/go.mod" ]] || printf 'module lvms.local/csi-tools-probe\n\ngo 1.26\n' >"${probe}/go.mod"
	dir=$(cd "${probe}" && dir_of "${mod}" "${ver}")
	[[ -d "${dir}/config/crd" ]] || { log "no config/crd in ${mod}@${ver}"; return 1; }
	rm -rf "${crds}"
	mkdir -p "${crds}"
	cp "${dir}"/config/crd/*.yaml "${crds}/"
	chmod u+w "${crds}"/*.yaml
	touch "${crds}/.complete"
	log "CRDs of ${mod}: ${crds}"
}

mkdir -p "${OUT}" "${SRC}"
# Concurrent runs (several engineers, several make targets) wait for each other.
exec 9>"${OUT}/.lock"
flock 9
total=${SECONDS}
for group in "${GROUPS_IN_ORDER[@]}"; do
	build_group "${group}"
done
copy_crds snapshot-crds "${CRD_MODULE}" "${CSI_SNAPSHOTTER_VERSION}"
copy_crds snapshot-metadata-crds "${SNAPSHOT_METADATA_CRD_MODULE}" "${SNAPSHOT_METADATA_CLIENT_VERSION}"
log "all tools ready in $((SECONDS - total)) s: ${OUT}"
echo "${OUT}"
