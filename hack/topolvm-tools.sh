#!/usr/bin/env bash
# Builds TopoLVM's hypertopolvm (the peer of make bench-peer, docs/performance.md) from the Go module
# proxy into a per-version cache directory outside the repository, copies TopoLVM's LogicalVolume
# CRD (config/crd/bases of the same module) and LICENSE next to it, reuses them when they are there, and prints
# that directory as the LAST line of stdout. Progress goes to stderr. Nothing of TopoLVM enters
# this repository, the product's go.mod or the product image: the peer's image is built from this
# directory by `lvms-dev image topolvm` (dev/internal/image/topolvm.go).
#
# Layout of the printed directory:
#   hypertopolvm                    static (CGO_ENABLED=0, -trimpath), TopoLVM's version stamped in
#   crds/topolvm.io_logicalvolumes.yaml
#   LICENSE                         TopoLVM's (Apache-2.0), which the peer image carries
#   .complete                       written once all are there and hypertopolvm answered
#
# `go install pkg@version` builds it as it is: TopoLVM's go.mod has no replace directives, so no
# wrapper module is needed (hack/csi-tools.sh explains when one is). The proxy serves
# github.com/topolvm/topolvm at v0.41.0 only (ask for the exact version). TopoLVM's own image also
# carries csi-node-driver-registrar and livenessprobe: the proxy serves neither at a v2 version
# (their go.mod files lack the /v2 suffix), so the peer runs dev/cmd/csi-registrar instead of the
# registrar and no livenessprobe (docs/performance.md, "TopoLVM in the same run").
set -euo pipefail

TOPOLVM_VERSION="${TOPOLVM_VERSION:-v0.41.0}"
MODULE="github.com/topolvm/topolvm"
CACHE_ROOT="${LVMS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms}"
OUT="${CACHE_ROOT}/topolvm/${TOPOLVM_VERSION}-$(go env GOVERSION)"

log() { echo "topolvm-tools: $*" >&2; }

mkdir -p "${OUT}"
# Concurrent runs wait for each other.
exec 9>"${OUT}/.lock"
flock 9
if [[ -f "${OUT}/.complete" && -x "${OUT}/hypertopolvm" ]]; then
	log "TopoLVM ${TOPOLVM_VERSION}: already built"
	echo "${OUT}"
	exit 0
fi
start=${SECONDS}
rm -rf "${OUT}"/.build.* # left by an interrupted run
tmp="${OUT}/.build.$$"
rm -rf "${tmp}"
mkdir -p "${tmp}"
trap 'rm -rf "${tmp}"' EXIT
log "building hypertopolvm ${TOPOLVM_VERSION} from the module proxy (minutes when the Go build cache is cold)"
# The wrapper module: TopoLVM's go.mod (so that its dependencies keep their versions) renamed, without
# its toolchain and tool lines, requiring TopoLVM itself; tools.go imports the command.
src="${CACHE_ROOT}/topolvm-src/${TOPOLVM_VERSION}"
mkdir -p "${src}"
[[ -f "${src}/go.mod" ]] || printf 'module lvms.local/topolvm-probe\n\ngo 1.26\n' >"${src}/go.mod"
gomod=$(cd "${src}" && GOFLAGS= go mod download -json "${MODULE}@${TOPOLVM_VERSION}" |
	sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[[ -f "${gomod}" ]] || { log "cannot find the go.mod of ${MODULE}@${TOPOLVM_VERSION}"; exit 1; }
sed -E -e 's#^module .*#module lvms.local/topolvm-peer#' -e '/^toolchain /d' -e '/^tool /d' "${gomod}" >"${src}/go.mod"
printf '\nrequire %s %s\n' "${MODULE}" "${TOPOLVM_VERSION}" >>"${src}/go.mod"
printf '//go:build tools\n\n// Package tools pins the command this module builds.\npackage tools\n\nimport _ "%s/cmd/hypertopolvm"\n' \
	"${MODULE}" >"${src}/tools.go"
(cd "${src}" && GOFLAGS= go mod tidy >&2)
(cd "${src}" && GOFLAGS= CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X ${MODULE}.Version=${TOPOLVM_VERSION}" \
	-o "${tmp}/hypertopolvm" "${MODULE}/cmd/hypertopolvm" >&2)
# hypertopolvm picks the command by its argv[0] or first argument; lvmd's --version prints the stamp.
if ! version=$("${tmp}/hypertopolvm" lvmd --version 2>&1); then
	log "hypertopolvm lvmd --version failed: ${version}"
	exit 1
fi
log "hypertopolvm: ${version}"
mv "${tmp}/hypertopolvm" "${OUT}/hypertopolvm"
dir=$(cd "${src}" && GOFLAGS= go mod download -json "${MODULE}@${TOPOLVM_VERSION}" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
crd="${dir}/config/crd/bases/topolvm.io_logicalvolumes.yaml"
[[ -f "${crd}" ]] || { log "no ${crd} in ${MODULE}@${TOPOLVM_VERSION}"; exit 1; }
mkdir -p "${OUT}/crds"
cp "${crd}" "${OUT}/crds/"
cp "${dir}/LICENSE" "${OUT}/LICENSE"
chmod u+w "${OUT}/crds/"*.yaml "${OUT}/LICENSE"
touch "${OUT}/.complete"
log "TopoLVM ${TOPOLVM_VERSION} ready in $((SECONDS - start)) s: ${OUT}"
echo "${OUT}"
