#!/usr/bin/env bash
# Builds the pinned Kubernetes CSI tools that `make sanity` and the local dev cluster use
# (csi-sanity, csi-provisioner, csi-resizer, csi-snapshotter, snapshot-controller) from the Go
# module proxy into a per-version cache directory outside the repository, copies the
# VolumeSnapshot CRDs next to them, reuses everything already built, and prints that directory as
# the LAST line of stdout. Progress goes to stderr.
#
# Layout of the printed directory:
#   csi-sanity csi-provisioner csi-resizer csi-snapshotter snapshot-controller
#   snapshot-crds/*.yaml    config/crd of external-snapshotter/client (VolumeSnapshot*, VolumeGroupSnapshot*)
#   .complete-<tool>        written after <tool> was built and answered --version/-h
#
# Why wrapper modules: each tool pins its own k8s.io versions and some upstream go.mod files carry
# replace directives (external-snapshotter: "client/v8 => ./client"; external-provisioner: one
# per k8s.io staging module), which `go install pkg@version` refuses. Every tool is built in its
# own throw-away main module under ${CACHE_ROOT}/csi-tools-src/<tool>-<version>: upstream's
# go.mod with the module line renamed, local "=> ./dir" replaces pointed at the published module
# of the same version, and a require of the upstream module (see shared PROVING-GROUND §A).
# external-provisioner v6.4.0 needs a dependency the proxy lacks, hence v6.3.0.
#
# Build flags are fixed (CGO_ENABLED=0 -trimpath, the same as hack/kube-assets.sh) so warm
# rebuilds hit the Go build cache.
set -euo pipefail

CSI_SANITY_VERSION="${CSI_SANITY_VERSION:-v5.6.0}"
CSI_PROVISIONER_VERSION="${CSI_PROVISIONER_VERSION:-v6.3.0}"
CSI_RESIZER_VERSION="${CSI_RESIZER_VERSION:-v2.3.0}"
CSI_SNAPSHOTTER_VERSION="${CSI_SNAPSHOTTER_VERSION:-v8.7.0}"

CACHE_ROOT="${LVMS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms}"
KEY="sanity-${CSI_SANITY_VERSION}_provisioner-${CSI_PROVISIONER_VERSION}"
KEY+="_resizer-${CSI_RESIZER_VERSION}_snapshotter-${CSI_SNAPSHOTTER_VERSION}"
OUT="${CACHE_ROOT}/csi-tools/${KEY}"
SRC="${CACHE_ROOT}/csi-tools-src"

# tool|upstream module|version|package path inside the module|version flag
TOOLS=(
	"csi-sanity|github.com/kubernetes-csi/csi-test/v5|${CSI_SANITY_VERSION}|cmd/csi-sanity|-version"
	"csi-resizer|github.com/kubernetes-csi/external-resizer/v2|${CSI_RESIZER_VERSION}|cmd/csi-resizer|--version"
	"csi-provisioner|github.com/kubernetes-csi/external-provisioner/v6|${CSI_PROVISIONER_VERSION}|cmd/csi-provisioner|--version"
	"csi-snapshotter|github.com/kubernetes-csi/external-snapshotter/v8|${CSI_SNAPSHOTTER_VERSION}|cmd/csi-snapshotter|--version"
	"snapshot-controller|github.com/kubernetes-csi/external-snapshotter/v8|${CSI_SNAPSHOTTER_VERSION}|cmd/snapshot-controller|--version"
)
CRD_MODULE="github.com/kubernetes-csi/external-snapshotter/client/v8"

log() { echo "csi-tools: $*" >&2; }

# gomod_of prints the path of the downloaded go.mod of module@version (run inside a module dir).
gomod_of() { # module version
	go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p'
}

# dir_of prints the extracted module directory of module@version (run inside a module dir).
dir_of() { # module version
	go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

# write_wrapper writes the wrapper module for one tool into $1.
write_wrapper() { # dir tool module version pkg
	local dir=$1 tool=$2 mod=$3 ver=$4 pkg=$5 gomod
	mkdir -p "${dir}"
	[[ -f "${dir}/go.mod" ]] || printf 'module lvms.local/csi-tools-probe\n\ngo 1.26\n' >"${dir}/go.mod"
	gomod=$(cd "${dir}" && gomod_of "${mod}" "${ver}")
	[[ -f "${gomod}" ]] || { log "cannot find go.mod of ${mod}@${ver}"; return 1; }
	# Rename the module; drop toolchain and tool lines; point "X [v] => ./dir" at X@ver.
	sed -E \
		-e "s#^module .*#module lvms.local/csi-tools/${tool}#" \
		-e '/^toolchain /d' \
		-e '/^tool /d' \
		-e "s#^([[:space:]]*(replace[[:space:]]+)?)([^[:space:]]+)([[:space:]]+v[^[:space:]]+)?[[:space:]]+=>[[:space:]]+\.\.?/.*#\1\3 => \3 ${ver}#" \
		"${gomod}" >"${dir}/go.mod.tmp"
	printf '\nrequire %s %s\n' "${mod}" "${ver}" >>"${dir}/go.mod.tmp"
	mv "${dir}/go.mod.tmp" "${dir}/go.mod"
	cat >"${dir}/tools.go" <<GO
//go:build tools

// Package tools pins the command this module builds.
package tools

import _ "${mod}/${pkg}"
GO
}

# build_tool builds one tool unless its .complete marker exists.
build_tool() { # spec
	local tool mod ver pkg vflag
	IFS='|' read -r tool mod ver pkg vflag <<<"$1"
	if [[ -f "${OUT}/.complete-${tool}" && -x "${OUT}/${tool}" ]]; then
		log "${tool} ${ver}: already built"
		return 0
	fi
	local dir="${SRC}/${tool}-${ver}" start=${SECONDS}
	log "${tool} ${ver}: preparing wrapper module ${dir}"
	write_wrapper "${dir}" "${tool}" "${mod}" "${ver}" "${pkg}"
	(cd "${dir}" && go mod tidy >&2)
	log "${tool} ${ver}: building (minutes when the Go build cache is cold)"
	(cd "${dir}" && CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w -X main.version=${ver} -X main.VERSION=${ver}" \
		-o "${OUT}/${tool}.tmp.$$" "${mod}/${pkg}" >&2)
	mv "${OUT}/${tool}.tmp.$$" "${OUT}/${tool}"
	verify_tool "${tool}" "${vflag}"
	touch "${OUT}/.complete-${tool}"
	log "${tool} ${ver}: built in $((SECONDS - start)) s"
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

# copy_crds copies the VolumeSnapshot CRDs from the external-snapshotter client module zip.
copy_crds() {
	local crds="${OUT}/snapshot-crds"
	if [[ -f "${crds}/.complete" ]]; then
		log "snapshot CRDs: ${crds}"
		return 0
	fi
	local probe="${SRC}/crd-probe" dir
	mkdir -p "${probe}"
	[[ -f "${probe}/go.mod" ]] || printf 'module lvms.local/csi-tools-probe\n\ngo 1.26\n' >"${probe}/go.mod"
	dir=$(cd "${probe}" && dir_of "${CRD_MODULE}" "${CSI_SNAPSHOTTER_VERSION}")
	[[ -d "${dir}/config/crd" ]] || { log "no config/crd in ${CRD_MODULE}@${CSI_SNAPSHOTTER_VERSION}"; return 1; }
	rm -rf "${crds}"
	mkdir -p "${crds}"
	cp "${dir}"/config/crd/*.yaml "${crds}/"
	chmod u+w "${crds}"/*.yaml
	touch "${crds}/.complete"
	log "snapshot CRDs: ${crds}"
}

mkdir -p "${OUT}" "${SRC}"
# Concurrent runs (several engineers, several make targets) wait for each other.
exec 9>"${OUT}/.lock"
flock 9
total=${SECONDS}
for spec in "${TOOLS[@]}"; do
	build_tool "${spec}"
done
copy_crds
log "all tools ready in $((SECONDS - total)) s: ${OUT}"
echo "${OUT}"
