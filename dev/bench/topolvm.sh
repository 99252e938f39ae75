#!/usr/bin/env bash
# The TopoLVM half of make bench-peer (docs/performance.md, "TopoLVM in the same run"): the
# provisioning benchmark of dev/bench/cluster.sh, with TopoLVM (TOPOLVM_VERSION, v0.41.0) in place
# of lvms, on a fresh dev cluster of the same shape (NODES nodes, 2 x 8 GiB disks each) without the
# product. It builds hypertopolvm from the Go module proxy (hack/topolvm-tools.sh, cached) and
# TopoLVM's image into _output/topolvm-images (lvms-dev image topolvm), next to links to the images
# of _output/images the peer needs (pause, workload, the CSI sidecars: the same ones lvms runs, and
# not lvms' image, which would take the nodes' memory); brings the cluster up from that directory
# (lvms-dev up --no-product), replaces lvms' LogicalVolume CRD (the dev cluster applies
# config/crd/bases; TopoLVM's has the same name) with TopoLVM's, creates the volume groups
# (dev/bench/topolvm/node-shell.yaml), installs TopoLVM (dev/bench/topolvm/topolvm.yaml), runs
# bench-cluster --driver topolvm for each class and tears the cluster down whatever happens.
#
# Environment: CLAIMS (1), NODES (2), CLASSES ("lvms-thin lvms-thick"), BENCH_ARGS, NODE_MEMORY and
# BENCH_KEEP=1 as in dev/bench/cluster.sh; BENCH_OUT (default _output/bench/<UTC timestamp>-topolvm);
# BENCH_STATE_DIR (default ${XDG_CACHE_HOME:-~/.cache}/lvms/bench-topolvm); TOPOLVM_PROVISIONER_ARGS,
# extra csi-provisioner arguments for TopoLVM (e.g. "--worker-threads=50 --timeout=2m", lvms'
# values; default none: the chart's). Results: <BENCH_OUT>/<class>/{result.json,table.txt,...},
# summary.txt, and the logs of TopoLVM's pods in logs/. The nodes import the images of
# _output/images (make images; make bench-peer builds them first).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
CLAIMS="${CLAIMS:-1}"
NODES="${NODES:-2}"
TOPOLVM_VERSION="${TOPOLVM_VERSION:-v0.41.0}"
export TOPOLVM_VERSION
STATE="${BENCH_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms/bench-topolvm}"
OUT="${BENCH_OUT:-_output/bench/$(date -u +%Y%m%dT%H%M%SZ)-topolvm}"
IMAGES="${PWD}/_output/topolvm-images"
NS=topolvm-system
BIN="$(mktemp -d)"
trap 'rm -rf "${BIN}"' EXIT
log() { echo "bench-topolvm: $*" >&2; }

# save_logs writes the log of every container of TopoLVM's pods to ${OUT}/logs/.
save_logs() {
	[[ -s "${STATE}/kubeconfig" ]] || return 0
	mkdir -p "${OUT}/logs"
	local pod c
	for pod in $("${kubectl}" --kubeconfig "${STATE}/kubeconfig" -n "${NS}" get pods -o name 2>/dev/null); do
		for c in $("${kubectl}" --kubeconfig "${STATE}/kubeconfig" -n "${NS}" get "${pod}" \
			-o jsonpath='{.spec.containers[*].name}'); do
			"${kubectl}" --kubeconfig "${STATE}/kubeconfig" -n "${NS}" logs "${pod}" -c "${c}" \
				>"${OUT}/logs/${pod#pod/}_${c}.log" 2>&1 || true
		done
	done
}

# peer_images builds TopoLVM's image into ${IMAGES} and links the images of _output/images it needs.
peer_images() {
	local tools name
	tools="$(bash hack/topolvm-tools.sh | tail -1)"
	"${BIN}/lvms-dev" image topolvm --topolvm-dir "${tools}" --out "${IMAGES}" >&2
	for name in pause workload csi-provisioner csi-resizer csi-snapshotter; do
		[[ -f "_output/images/${name}.tar" ]] || { log "no _output/images/${name}.tar: run make images"; return 1; }
		ln -sfn "${PWD}/_output/images/${name}.tar" "${IMAGES}/${name}.tar"
	done
	TOPOLVM_CRDS="${tools}/crds"
}

# install_topolvm swaps the LogicalVolume CRD, creates the volume groups and installs TopoLVM.
install_topolvm() {
	"${kubectl}" delete crd logicalvolumes.topolvm.io --wait=true >&2
	"${kubectl}" apply --server-side -f "${TOPOLVM_CRDS}/" >&2
	"${kubectl}" wait --for=condition=Established crd/logicalvolumes.topolvm.io --timeout=60s >&2
	sed "s/TOPOLVM_VERSION/${TOPOLVM_VERSION}/g" dev/bench/topolvm/node-shell.yaml |
		"${kubectl}" apply --server-side -f - >&2
	"${kubectl}" -n "${NS}" rollout status daemonset/peer-node-shell --timeout=10m >&2
	# TOPOLVM_PROVISIONER_ARGS go after csi-provisioner's last argument (its list ends the line with
	# "--capacity-ownerref-level=2]"; TestPeerManifests keeps it so).
	local arg extra=""
	for arg in ${TOPOLVM_PROVISIONER_ARGS:-}; do extra+=", ${arg}"; done
	sed -e "s/TOPOLVM_VERSION/${TOPOLVM_VERSION}/g" \
		-e "s#--capacity-ownerref-level=2]#--capacity-ownerref-level=2${extra}]#" dev/bench/topolvm/topolvm.yaml |
		"${kubectl}" apply --server-side -f - >&2
	"${kubectl}" -n "${NS}" rollout status daemonset/topolvm-lvmd-0 --timeout=10m >&2
	"${kubectl}" -n "${NS}" rollout status daemonset/topolvm-node --timeout=10m >&2
	"${kubectl}" -n "${NS}" rollout status deployment/topolvm-controller --timeout=10m >&2
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
mkdir -p "${IMAGES}"
peer_images
trap finish EXIT
"${BIN}/lvms-dev" down --state-dir "${STATE}" >/dev/null 2>&1 || true
start=${SECONDS}
up_args=()
[[ -n "${NODE_MEMORY:-}" ]] && up_args+=(--memory "${NODE_MEMORY}")
# Room for the claims' pods beside TopoLVM's and the system's, as dev/bench/cluster.sh gives lvms.
per_node=$(((CLAIMS + NODES - 1) / NODES))
((per_node + 10 > 40)) && up_args+=(--max-pods "$((per_node + 10))")
"${BIN}/lvms-dev" up --state-dir "${STATE}" --nodes "${NODES}" --disks 2 --disk-size 8 --no-product \
	--images-dir "${IMAGES}" "${up_args[@]}" >&2
export KUBECONFIG="${STATE}/kubeconfig"
install_topolvm
log "cluster with ${NODES} nodes and TopoLVM ${TOPOLVM_VERSION} ready in $((SECONDS - start)) s"
mkdir -p "${OUT}"
failed=0
for class in ${CLASSES:-lvms-thin lvms-thick}; do
	pool=()
	[[ "${class}" == lvms-thin ]] && pool=(--floor-thin-pool thin-pool-1)
	# shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
	"${BIN}/bench-cluster" --storage-class "${class}" --claims "${CLAIMS}" --nodes "${NODES}" \
		--namespace "bench-${class}" --results "${OUT}/${class}" --driver topolvm \
		--driver-version "${TOPOLVM_VERSION}" --node-shell "${NS}/app.kubernetes.io/name=peer-node-shell" \
		--floor-vg "${class#lvms-}" "${pool[@]}" ${BENCH_ARGS:-} | tee -a "${OUT}/summary.txt" || failed=1
done
exit "${failed}"
