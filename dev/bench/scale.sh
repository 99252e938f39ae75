#!/usr/bin/env bash
# make bench-scale: the control-plane scale benchmark (docs/performance.md). A dev cluster without
# guest nodes (etcd, kube-apiserver with an audit log of our components' requests, kube-scheduler,
# kube-controller-manager), then dev/bench/scale: kwok, the operator (bin/lvms) and the
# csi-provisioner as host processes, simulated node agents in its own process, the cluster grown
# to each node count of STEPS. Torn down after, unless BENCH_KEEP=1.
#
#   STEPS=100,1000,5000 CLAIMS=100 make bench-scale
#   LVMS_BIN=/tmp/lvms-old BENCH_ARGS=--every-volume-group-update bash dev/bench/scale.sh   # an older operator and agents' filter
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
STEPS="${STEPS:-100,1000,5000}"
CLAIMS="${CLAIMS:-100}"
STATE="${BENCH_SCALE_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms/bench-scale}"
OUT="${RESULTS:-_output/bench/scale-$(date -u +%Y%m%dT%H%M%SZ)}"
BIN="$(mktemp -d)"
log() { echo "bench-scale: $*" >&2; }

source hack/lib/devcluster.sh
finish() {
	devcluster_finish "$?" "${BENCH_KEEP:-}" "${BIN}/lvms-dev" "${STATE}" "${BIN}" \
		"logs: ${OUT}/logs, ${STATE}/logs" "results in ${OUT}"
}

assets="$(bash hack/kube-assets.sh | tail -1)"
csi="$(bash hack/csi-tools.sh | tail -1)"
kwok="$(bash hack/kwok.sh | tail -1)"
# LVMS_BIN: an operator binary built elsewhere (another commit's, to compare).
if [[ -n "${LVMS_BIN:-}" ]]; then cp "${LVMS_BIN}" "${BIN}/lvms"; else go build -o "${BIN}/lvms" ./cmd/lvms; fi
go build -o "${BIN}/kubectl-lvms" ./cmd/kubectl-lvms
go -C dev build -o "${BIN}/lvms-dev" ./cmd/lvms-dev
go -C dev build -o "${BIN}/scale" ./bench/scale
mkdir -p "${OUT}"
OUT="$(cd "${OUT}" && pwd)"
"${BIN}/scale" write-audit-policy "${OUT}/audit-policy.yaml"
trap finish EXIT
"${BIN}/lvms-dev" down --state-dir "${STATE}" >/dev/null 2>&1 || true
"${BIN}/lvms-dev" up --state-dir "${STATE}" --nodes 0 --no-product --kube-assets "${assets}" --csi-tools "${csi}" \
	--user lvms-operator --user lvms-node-sim --user csi-provisioner --user kwok \
	--apiserver-arg=--audit-policy-file="${OUT}/audit-policy.yaml" \
	--apiserver-arg=--audit-log-path="${OUT}/audit.log" --apiserver-arg=--audit-log-maxbackup=0 \
	--apiserver-arg=--max-requests-inflight=800 --apiserver-arg=--max-mutating-requests-inflight=400 \
	--controller-manager-arg=--node-monitor-grace-period=5m >&2
# kwok renews each node's Lease every quarter of its 240 s duration (dev/bench/scale/procs.go): the
# grace period of 5 min keeps thousands of nodes Ready with a quarter of the writes of 40 s leases.
log "control plane up; steps ${STEPS}, ${CLAIMS} claims each"
"${BIN}/scale" --state-dir "${STATE}" --audit-log "${OUT}/audit.log" --lvms "${BIN}/lvms" \
	--kubectl-lvms "${BIN}/kubectl-lvms" --csi-provisioner "${csi}/csi-provisioner" --kwok "${kwok}" \
	--steps "${STEPS}" --claims "${CLAIMS}" --results "${OUT}" ${BENCH_ARGS:-}
