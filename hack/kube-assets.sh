#!/usr/bin/env bash
# Builds pinned Kubernetes binaries (kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl, and the kubelet the dev cluster's nodes run inside UML guests) and etcd from the Go
# module proxy into a per-version cache directory outside the repository, reuses them when
# present, and prints that directory as the LAST line of stdout. Everything else goes to stderr.
#
# Why a wrapper module: k8s.io/kubernetes requires its ~31 staging modules at v0.0.0 with
# "=> ./staging/..." replaces, so `go install k8s.io/kubernetes/...@vX` refuses. We build from a
# throw-away main module that requires k8s.io/kubernetes and replaces each staging module with its
# published v0.<minor>.<patch> tag (see shared PROVING-GROUND §A). The kubelet needs one of them
# that the control plane does not: k8s.io/cri-streaming (derived like the others).
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.0}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.0}"
CACHE_ROOT="${LVMS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms}"
OUT="${CACHE_ROOT}/kube-assets/${KUBE_VERSION}-etcd${ETCD_VERSION}"
SRC="${CACHE_ROOT}/kube-assets-src/${KUBE_VERSION}-etcd${ETCD_VERSION}"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet etcd)

log() { echo "kube-assets: $*" >&2; }

have_all() {
	local b
	for b in "${BINARIES[@]}"; do
		[[ -x "${OUT}/${b}" ]] || return 1
	done
	[[ -f "${OUT}/.complete" ]]
}

if have_all; then
	log "reusing ${OUT}"
	echo "${OUT}"
	exit 0
fi

mkdir -p "${OUT}" "${SRC}/kube" "${SRC}/etcd"
staging_minor="v0.${KUBE_VERSION#v1.}" # v1.37.0 -> v0.37.0

build_kube() {
	local gomod
	log "resolving k8s.io/kubernetes@${KUBE_VERSION}"
	gomod=$(cd "${SRC}/kube" && go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
	[[ -f "${gomod}" ]] || { log "cannot find go.mod of k8s.io/kubernetes@${KUBE_VERSION}"; return 1; }
	grep -q 'k8s.io/cri-streaming => ./staging' "${gomod}" ||
		{ log "k8s.io/kubernetes@${KUBE_VERSION} has no cri-streaming staging replace (the kubelet needs it)"; return 1; }
	local goline
	goline=$(grep -E '^go [0-9]' "${gomod}" | head -1)
	{
		echo "module lvms.local/kube-assets"
		echo
		echo "${goline}"
		echo
		echo "require k8s.io/kubernetes ${KUBE_VERSION}"
		echo
		echo "replace ("
		sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"${staging_minor}"'#p' "${gomod}"
		echo ")"
	} >"${SRC}/kube/go.mod"
	cat >"${SRC}/kube/tools.go" <<'GO'
//go:build tools

// Package tools pins the Kubernetes commands this module builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
	log "go mod tidy (kubernetes)"
	(cd "${SRC}/kube" && go mod tidy >&2)
	local minor="${KUBE_VERSION#v1.}"
	minor="${minor%%.*}"
	local ldflags="-s -w"
	local pkg
	for pkg in component-base/version client-go/pkg/version; do
		ldflags+=" -X k8s.io/${pkg}.gitVersion=${KUBE_VERSION}"
		ldflags+=" -X k8s.io/${pkg}.gitMajor=1 -X k8s.io/${pkg}.gitMinor=${minor}"
		ldflags+=" -X k8s.io/${pkg}.gitTreeState=clean"
	done
	local cmd tmp="${OUT}/.build.$$"
	local -a todo=() pkgs=()
	for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet; do
		[[ -x "${OUT}/${cmd}" ]] && continue
		todo+=("${cmd}")
		pkgs+=("k8s.io/kubernetes/cmd/${cmd}")
	done
	[[ ${#todo[@]} -gt 0 ]] || return 0
	# One go build for all of them: the linker of one runs while the compiler works on the next.
	log "building ${todo[*]} ${KUBE_VERSION} (about 10 min on 2 cores when the Go build cache is cold)"
	rm -rf "${tmp}"
	mkdir -p "${tmp}"
	(cd "${SRC}/kube" && CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${tmp}/" "${pkgs[@]}" >&2)
	for cmd in "${todo[@]}"; do
		mv "${tmp}/${cmd}" "${OUT}/${cmd}"
	done
	rm -rf "${tmp}"
}

build_etcd() {
	[[ -x "${OUT}/etcd" ]] && return 0
	cat >"${SRC}/etcd/go.mod" <<GOMOD
module lvms.local/etcd-assets

go 1.26

require go.etcd.io/etcd/server/v3 ${ETCD_VERSION}
GOMOD
	cat >"${SRC}/etcd/tools.go" <<'GO'
//go:build tools

// Package tools pins the etcd server this module builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
GO
	log "go mod tidy (etcd)"
	(cd "${SRC}/etcd" && go mod tidy >&2)
	log "building etcd ${ETCD_VERSION}"
	(cd "${SRC}/etcd" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" \
		-o "${OUT}/etcd.tmp" go.etcd.io/etcd/server/v3 >&2)
	mv "${OUT}/etcd.tmp" "${OUT}/etcd"
}

build_etcd
build_kube
"${OUT}/kube-apiserver" --version >&2
"${OUT}/kubelet" --version >&2
"${OUT}/etcd" --version >&2
touch "${OUT}/.complete"
echo "${OUT}"
