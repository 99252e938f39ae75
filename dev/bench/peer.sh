#!/usr/bin/env bash
# make bench-peer (docs/performance.md, "TopoLVM in the same run"): the provisioning benchmark of lvms
# and then of TopoLVM (TOPOLVM_VERSION, v0.41.0), each on a fresh dev cluster of the same shape with
# the same disks, classes, claims and phases, and both tables side by side. Results under
# _output/bench/<UTC timestamp>-peer/ (BENCH_OUT): lvms/ (dev/bench/cluster.sh's results), topolvm/
# (dev/bench/topolvm.sh's) and summary.txt, which holds `bench-cluster compare` of each class: per
# phase each driver's n, p50, p99 and p50/floor (the floor, one lvcreate timed on an idle node plus
# an apiserver round trip, measured the same way in each run) and TopoLVM's p50 over lvms'.
#
# Environment: CLAIMS (1), NODES (2), CLASSES ("lvms-thin lvms-thick"), BENCH_ARGS (both runs),
# NODE_MEMORY, TOPOLVM_PROVISIONER_ARGS (dev/bench/topolvm.sh). SCALE, PROFILE and OPERATOR_NODE
# are lvms-only (make bench-cluster). Both runs happen even when the first fails; the exit status
# is 1 when either failed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
for v in SCALE OPERATOR_NODE; do
	if [[ -n "${!v:-}" ]]; then
		echo "bench-peer: ${v} is not supported (make bench-cluster has it)" >&2
		exit 2
	fi
done
if [[ "${PROFILE:-0}" != 0 ]]; then
	echo "bench-peer: PROFILE is not supported (make bench-cluster has it)" >&2
	exit 2
fi
OUT="${BENCH_OUT:-_output/bench/$(date -u +%Y%m%dT%H%M%SZ)-peer}"
mkdir -p "${OUT}"
failed=0
BENCH_OUT="${OUT}/lvms" PROFILE=0 bash dev/bench/cluster.sh || failed=1
BENCH_OUT="${OUT}/topolvm" bash dev/bench/topolvm.sh || failed=1
bench="$(mktemp -d)"
trap 'rm -rf "${bench}"' EXIT
go -C dev build -o "${bench}/bench-cluster" ./bench/cluster
: >"${OUT}/summary.txt"
for class in ${CLASSES:-lvms-thin lvms-thick}; do
	results=("${OUT}/lvms/${class}/result.json" "${OUT}/topolvm/${class}/result.json")
	if [[ -f "${results[0]}" && -f "${results[1]}" ]]; then
		"${bench}/bench-cluster" compare "${results[@]}" | tee -a "${OUT}/summary.txt" || failed=1
	else
		echo "bench-peer: ${class}: no result of one of the drivers (${results[*]})" | tee -a "${OUT}/summary.txt" >&2
		failed=1
	fi
done
echo "bench-peer: results in ${OUT} (summary.txt; lvms/ and topolvm/ hold each run's tables and logs)" >&2
exit "${failed}"
