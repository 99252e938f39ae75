#!/usr/bin/env bash
# Runs csi-sanity against the real driver stack on real lvm2 (what `make sanity` calls).
#
# The host half of ./dev/sanity (TestSanityHost, build tag sanity) starts an envtest control plane
# (kube-apiserver + etcd from hack/kube-assets.sh) on the host and boots one User-mode Linux guest
# (dev/internal/uml, standard disk layout) running the guest half (TestSanity, build tag guest),
# which reaches the apiserver over the serial-line bridge and builds a thick and a thin volume group,
# runs the node agent and the CSI controller, and the csi-sanity BINARY (built from the Go module
# proxy by hack/csi-tools.sh) three times: thick filesystem volumes, thin filesystem volumes with
# snapshots, thick block volumes. See docs/testing-sanity.md.
#
# Environment: CSI_SANITY=<path> uses that csi-sanity binary instead of building one;
# SANITY_TIMEOUT (default 40m, whole minutes) bounds the guest, the guest test one minute less;
# SANITY_MEM (MiB, default 1024) is its memory;
# SANITY_KEEP=1 keeps the work directory (logs, ginkgo JSON reports) and prints its path.
# Prints each run's csi-sanity summary and a final "sanity: PASS|FAIL" line; exits non-zero on failure.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
TIMEOUT="${SANITY_TIMEOUT:-40m}"
if [[ ! "${TIMEOUT}" =~ ^[0-9]+m$ || ${TIMEOUT%m} -lt 2 ]]; then
	echo "sanity: SANITY_TIMEOUT must be whole minutes (at least 2m), e.g. 40m" >&2
	exit 2
fi
HOST_TIMEOUT="$((${TIMEOUT%m} + 3))m"
MEM="${SANITY_MEM:-1024}"
CSI_SANITY_VERSION="${CSI_SANITY_VERSION:-v5.6.0}"
CACHE_ROOT="${LVMS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms}"
START=${SECONDS}

log() { echo "sanity: $*" >&2; }

# csi_sanity prints the path of the csi-sanity binary: $CSI_SANITY, else the one hack/csi-tools.sh
# builds with the other CSI tools, else one built here with go install into our own cache dir.
csi_sanity() {
	if [[ -n "${CSI_SANITY:-}" ]]; then
		echo "${CSI_SANITY}"
		return
	fi
	local dir
	if [[ -f hack/csi-tools.sh ]] && dir="$(bash hack/csi-tools.sh | tail -1)" && [[ -x "${dir}/csi-sanity" ]]; then
		echo "${dir}/csi-sanity"
		return
	fi
	dir="${CACHE_ROOT}/csi-sanity/${CSI_SANITY_VERSION}"
	if [[ ! -x "${dir}/csi-sanity" ]]; then
		log "building csi-sanity ${CSI_SANITY_VERSION} into ${dir}"
		mkdir -p "${dir}"
		GOBIN="${dir}" CGO_ENABLED=0 go install -trimpath \
			"github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@${CSI_SANITY_VERSION}" >&2
	fi
	echo "${dir}/csi-sanity"
}

bash hack/uml-deps.sh
ASSETS="$(bash hack/kube-assets.sh | tail -1)"
SANITY_BIN="$(csi_sanity)"
log "kube assets ${ASSETS}; csi-sanity ${SANITY_BIN}"

WORK="$(mktemp -d /tmp/lvms-sanity.XXXXXX)"
if [[ "${SANITY_KEEP:-}" == 1 ]]; then
	trap 'log "work directory kept: ${WORK}"' EXIT
else
	trap 'rm -rf "${WORK}"' EXIT
fi
mkdir -p "${WORK}/out"

log "building the host and guest halves of ./dev/sanity"
CGO_ENABLED=0 go -C dev test -c -tags guest -o "${WORK}/sanity-guest.test" ./sanity
go -C dev test -c -tags sanity -o "${WORK}/sanity-host.test" ./sanity
CGO_ENABLED=0 go build -o "${WORK}/lvms" ./cmd/lvms

log "control plane on the host, one guest (${MEM} MiB, timeout ${TIMEOUT})"
rc=0
# go test -c binaries run in the package directory, as go test would run them.
(cd dev/sanity && KUBEBUILDER_ASSETS="${ASSETS}" CSI_SANITY="${SANITY_BIN}" SANITY_OUT="${WORK}/out" \
	SANITY_GUEST_TEST="${WORK}/sanity-guest.test" SANITY_LVMS="${WORK}/lvms" SANITY_GUEST_TIMEOUT="${TIMEOUT}" SANITY_MEM="${MEM}" \
	"${WORK}/sanity-host.test" -test.v -test.count=1 -test.run='^TestSanityHost$' \
	-test.timeout="${HOST_TIMEOUT}") || rc=$?

echo
echo "===== csi-sanity summaries"
if [[ -s "${WORK}/out/summary.txt" ]]; then
	cat "${WORK}/out/summary.txt"
else
	# A run that ran no csi-sanity at all (a test name matching nothing, a guest that never got to
	# it) is a failure, not a pass.
	echo "no summary written (see the guest output above)"
	((rc != 0)) || rc=1
fi
if ((rc != 0)); then
	for f in stack.log:60 control-plane.log:20 bridge-host.log:20; do
		if [[ -s "${WORK}/out/${f%%:*}" ]]; then
			echo "===== last lines of ${WORK}/out/${f%%:*}"
			tail -n "${f#*:}" "${WORK}/out/${f%%:*}"
		fi
	done
fi
if ((rc == 0)); then
	echo "sanity: PASS ($((SECONDS - START)) s)"
else
	echo "sanity: FAIL (exit ${rc}, $((SECONDS - START)) s)"
	exit 1
fi
