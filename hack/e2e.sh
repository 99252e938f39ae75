#!/usr/bin/env bash
# Runs the e2e suite (./test/e2e, build tag e2e) against a fresh dev cluster: lvms dev up (2 nodes,
# 3 x 8 GiB disks each), go test -tags e2e ./test/e2e/ with KUBECONFIG pointing at it, lvms dev down.
#
# Environment: E2E_STATE_DIR (default: a directory under ${XDG_CACHE_HOME:-~/.cache}/lvms/e2e-cluster)
# is the cluster's state directory; E2E_TIMEOUT (default 30m) bounds go test; E2E_RUN is passed as
# -run; E2E_KEEP=1 leaves the cluster up and prints how to reach it. Exits with go test's status.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
STATE="${E2E_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms/e2e-cluster}"
LVMS="$(mktemp -d)/lvms"
log() { echo "e2e: $*" >&2; }

go build -o "${LVMS}" ./cmd/lvms
down() {
	if [[ "${E2E_KEEP:-}" == 1 ]]; then
		log "cluster kept: export KUBECONFIG=${STATE}/kubeconfig; stop it with ${LVMS} dev down --state-dir ${STATE}"
		return
	fi
	"${LVMS}" dev down --state-dir "${STATE}" >&2 || true
	"${LVMS}" dev status --state-dir "${STATE}" --check-clean >&2 || log "WARNING: something of the cluster is left"
}
trap down EXIT

"${LVMS}" dev up --state-dir "${STATE}" --nodes 2 --disks 3 --disk-size 8 >&2
rc=0
KUBECONFIG="${STATE}/kubeconfig" go test -tags e2e -count=1 -v -timeout "${E2E_TIMEOUT:-30m}" \
	${E2E_RUN:+-run "${E2E_RUN}"} ./test/e2e/ || rc=$?
if [[ ${rc} -eq 0 ]]; then log PASS; else log "FAIL (logs: ${STATE}/logs)"; fi
exit "${rc}"
