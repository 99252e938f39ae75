#!/usr/bin/env bash
# make bench-cluster: the provisioning benchmark (dev/bench/cluster, docs/performance.md) on a fresh
# dev cluster. Brings up NODES nodes (lvms-dev up, 2 x 8 GiB disks each) in a state directory of its
# own, applies dev/bench/lvmcluster.yaml (a thin class on /dev/ubda, a thick one on /dev/ubdb),
# waits until it is Ready, runs bench-cluster for lvms-thin and then lvms-thick with CLAIMS claims
# pinned round robin over the NODES nodes, writes the results under _output/bench/<UTC timestamp>/
# (<class>/result.json, table.txt, phases.svg, cdf.svg, and summary.txt with both tables), and tears
# the cluster down whatever happens (a trap), failing when anything of it is left.
#
# Environment: CLAIMS (1), NODES (2); SCALE (e.g. 0,100,1000: instead of the claims, the scale mode,
# LogicalVolumes of SCALE_SIZE, default 32Mi, of the thin class on one node, whose LVMCluster is then
# dev/bench/lvmcluster-scale.yaml); BENCH_STATE_DIR (default
# ${XDG_CACHE_HOME:-~/.cache}/lvms/bench-cluster); BENCH_ARGS, extra flags for bench-cluster (e.g.
# "--with-snapshots --concurrency 5"); PROFILE=N (0: off) installs the product with --profiling
# (config/components/profiling) and takes N s of CPU profiles of the operator and the node agents
# from the start of each class's claims, and a heap profile after them, into
# <class>/profiles/<pod>.{cpu,heap}.pb.gz (`go tool pprof`); with SCALE, a heap profile at each count
# (scale/profiles/<count>lvs-<pod>.heap.pb.gz); CLASSES (default "lvms-thin lvms-thick")
# the StorageClasses to run, in order; NODE_MEMORY, MiB per node (lvms-dev up --memory; default its
# own); BENCH_KEEP=1 leaves the cluster up. The nodes import the
# images in _output/images (make images; make bench-cluster builds them first). OPERATOR_NODE=1 brings
# up one node more, node-NODES, and moves the operator's pod there before the LVMCluster is applied,
# so the claims (pinned to the first NODES nodes) never share a node with the operator and its CSI
# sidecars. LOG_LEVEL (e.g. debug) starts the operator with --zap-log-level=LOG_LEVEL, which it
# passes on to the node agents (at debug they log every host command as it starts and ends, with
# its duration). The logs of the product's pods are saved under <results>/logs/ before the
# teardown, whatever the level.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
CLAIMS="${CLAIMS:-1}"
NODES="${NODES:-2}"
STATE="${BENCH_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms/bench-cluster}"
# BENCH_OUT: where the results go instead (make bench-peer puts each driver's run in a directory of
# the peer run's).
OUT="${BENCH_OUT:-_output/bench/$(date -u +%Y%m%dT%H%M%SZ)}"
BIN="$(mktemp -d)"
log() { echo "bench-cluster: $*" >&2; }

# save_logs writes the log of every container of the product's pods to ${OUT}/logs/.
save_logs() {
	[[ -s "${STATE}/kubeconfig" ]] || return 0
	mkdir -p "${OUT}/logs"
	local pod c
	for pod in $("${kubectl}" --kubeconfig "${STATE}/kubeconfig" -n lvms-system get pods -o name 2>/dev/null); do
		for c in $("${kubectl}" --kubeconfig "${STATE}/kubeconfig" -n lvms-system get "${pod}" \
			-o jsonpath='{.spec.containers[*].name}'); do
			"${kubectl}" --kubeconfig "${STATE}/kubeconfig" -n lvms-system logs "${pod}" -c "${c}" \
				>"${OUT}/logs/${pod#pod/}_${c}.log" 2>&1 || true
		done
	done
}

# shellcheck source=hack/lib/devcluster.sh
source hack/lib/devcluster.sh
finish() {
	local rc=$?
	save_logs || true
	devcluster_finish "${rc}" "${BENCH_KEEP:-}" "${BIN}/lvms-dev" "${STATE}" "${BIN}" \
		"logs: ${STATE}/logs, results: ${OUT}" "results in ${OUT}"
}

go -C dev build -o "${BIN}/lvms-dev" ./cmd/lvms-dev
go -C dev build -o "${BIN}/bench-cluster" ./bench/cluster
kubectl="$(bash hack/kube-assets.sh | tail -1)/kubectl"
# The version make images stamped into the product image (the Makefile's VERSION) and the commit.
VERSION="$(git describe --tags --always --dirty 2>/dev/null || echo unknown) ($(git rev-parse --short HEAD 2>/dev/null))"
trap finish EXIT
"${BIN}/lvms-dev" down --state-dir "${STATE}" >/dev/null 2>&1 || true
start=${SECONDS}
PROFILE="${PROFILE:-0}"
up_args=()
[[ "${PROFILE}" -gt 0 ]] && up_args+=(--profiling)
[[ -n "${NODE_MEMORY:-}" ]] && up_args+=(--memory "${NODE_MEMORY}")
# Room for the claims' pods beside the product's and the system's (lvms-dev's default is 40).
per_node=$(((CLAIMS + NODES - 1) / NODES))
((per_node + 10 > 40)) && up_args+=(--max-pods "$((per_node + 10))")
all_nodes="${NODES}"
[[ "${OPERATOR_NODE:-}" == 1 ]] && all_nodes=$((NODES + 1))
"${BIN}/lvms-dev" up --state-dir "${STATE}" --nodes "${all_nodes}" --disks 2 --disk-size 8 "${up_args[@]}" >&2
export KUBECONFIG="${STATE}/kubeconfig"
if [[ -n "${LOG_LEVEL:-}" ]]; then
	"${kubectl}" -n lvms-system patch deployment lvms-operator --type json -p \
		"[{\"op\":\"add\",\"path\":\"/spec/template/spec/containers/0/args/-\",\"value\":\"--zap-log-level=${LOG_LEVEL}\"}]" >&2
	"${kubectl}" -n lvms-system rollout status deployment lvms-operator --timeout=10m >&2
	log "the operator and the node agents log at level ${LOG_LEVEL}"
fi
if [[ "${OPERATOR_NODE:-}" == 1 ]]; then
	"${kubectl}" -n lvms-system patch deployment lvms-operator --type merge \
		-p "{\"spec\":{\"template\":{\"spec\":{\"nodeSelector\":{\"kubernetes.io/hostname\":\"node-${NODES}\"}}}}}" >&2
	"${kubectl}" -n lvms-system rollout status deployment lvms-operator --timeout=10m >&2
	log "the operator runs on node-${NODES}; the claims go to the first ${NODES} nodes"
fi
lvmcluster=dev/bench/lvmcluster.yaml
# The scale mode's thin pool has room for the metadata of a thousand and more LVs.
[[ -n "${SCALE:-}" ]] && lvmcluster=dev/bench/lvmcluster-scale.yaml
"${kubectl}" apply --server-side -f "${lvmcluster}" >&2
"${kubectl}" wait -n lvms-system lvmcluster/bench --for=jsonpath='{.status.state}'=Ready --timeout=15m >&2
log "cluster with ${all_nodes} nodes and LVMCluster bench Ready in $((SECONDS - start)) s"
mkdir -p "${OUT}"
failed=0
if [[ -n "${SCALE:-}" ]]; then
	# The scale mode: LVs of the thin class on one node through the counts of SCALE, no claims.
	# shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
	"${BIN}/bench-cluster" --storage-class lvms-thin --scale-lvs "${SCALE}" --size "${SCALE_SIZE:-32Mi}" \
		--profile-seconds "${PROFILE}" --results "${OUT}/scale" ${BENCH_ARGS:-} | tee -a "${OUT}/summary.txt" || failed=1
	exit "${failed}"
fi
for class in ${CLASSES:-lvms-thin lvms-thick}; do
	# A namespace per class: a claim of one class that is stuck going away (a pod the node's runtime
	# cannot kill) must not take the name of the next class's claim.
	# shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
	"${BIN}/bench-cluster" --storage-class "${class}" --claims "${CLAIMS}" --nodes "${NODES}" \
		--namespace "bench-${class}" --profile-seconds "${PROFILE}" --results "${OUT}/${class}" \
		--driver lvms --driver-version "${VERSION}" ${BENCH_ARGS:-} | tee -a "${OUT}/summary.txt" || failed=1
done
exit "${failed}"
