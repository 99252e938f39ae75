#!/usr/bin/env bash
# Runs the e2e suite (./dev/e2e, build tag e2e) against a fresh dev cluster: lvms-dev up (2 nodes,
# 4 x 8 GiB disks each), go test -tags e2e ./dev/e2e/ with KUBECONFIG pointing at it (KUBECTL at the
# pinned kubectl, and the kubectl-lvms plugin on PATH), lvms-dev down. E2E_UPDATE_GOLDEN=1 rewrites the
# golden files of TestKubectlLVMS.
#
# Environment: E2E_STATE_DIR (default: a directory under ${XDG_CACHE_HOME:-~/.cache}/lvms/e2e-cluster)
# is the cluster's state directory; E2E_TIMEOUT (default 45m for the core set, 120m for the full set: on a
# 2-core machine the full set outlasted 75 min in CI at fd66241) bounds go test; E2E_RUN is passed as
# -run; E2E_PARALLEL (default 2 for the core set, 3 for the full set: the nodes are single-CPU guests on a 2-core host; alone at b041dfc
# two flows at once, every pod on one node, already outlasted 4-min waits there; the dev cluster's
# scheduler now spreads pods over both nodes, so three at once load a node less than that) is how
# many of TestVolumeFlows' flows run at once; E2E_KEEP=1
# leaves the cluster up and prints how to reach it. E2E_SET=core (the default
# without E2E_RUN; make test) leaves out the tests that only the full set runs (dev/e2e/sets_test.go,
# docs/e2e.md), E2E_SET=full (the default with E2E_RUN; make e2e-full) runs every test. The nodes import the images in _output/images
# (make images; make e2e builds them first). Fails when go test fails or when anything of the
# cluster (process, guest, mount, listener) is left after lvms-dev down.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
STATE="${E2E_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms/e2e-cluster}"
if [[ -n "${E2E_RUN:-}" ]]; then E2E_SET="${E2E_SET:-full}"; else E2E_SET="${E2E_SET:-core}"; fi
# The core set runs no test of the snapshot metadata service, so its cluster does without that
# Deployment (two containers a single-CPU node would carry for nothing) and runs two flows at once.
case "${E2E_SET}" in
core) timeout="${E2E_TIMEOUT:-45m}" parallel="${E2E_PARALLEL:-2}" snapmeta=() ;;
full) timeout="${E2E_TIMEOUT:-120m}" parallel="${E2E_PARALLEL:-3}" snapmeta=(--snapshot-metadata) ;;
*) echo "e2e: E2E_SET=${E2E_SET}: want core or full" >&2; exit 2 ;;
esac
export E2E_SET
BIN="$(mktemp -d)"
LVMS_DEV="${BIN}/lvms-dev"
log() { echo "e2e: $*" >&2; }

# shellcheck source=hack/lib/devcluster.sh
source hack/lib/devcluster.sh
# finish tears the cluster down (unless E2E_KEEP=1) and turns anything left of it into a failure.
finish() { devcluster_finish $? "${E2E_KEEP:-}" "${LVMS_DEV}" "${STATE}" "${BIN}" "logs: ${STATE}/logs"; }

go -C dev build -o "${LVMS_DEV}" ./cmd/lvms-dev
go build -o "${BIN}/kubectl-lvms" ./cmd/kubectl-lvms
go -C dev test -tags e2e -c -o "${BIN}/e2e.test" ./e2e/
trap finish EXIT
# The suite needs a fresh cluster: stop one an interrupted or kept (E2E_KEEP=1) run left here.
"${LVMS_DEV}" down --state-dir "${STATE}" >/dev/null 2>&1 || true
"${LVMS_DEV}" up --state-dir "${STATE}" --nodes 2 --disks 4 --disk-size 8 --scheduler-extender \
	"${snapmeta[@]}" --evacuator >&2
kubectl_bin="$(bash hack/kube-assets.sh | tail -1)/kubectl"
# The evacuator's roles stay installed (TestInstalledPrivileges checks them), but it runs only in the
# full set, which has its drain-mode test: in the core set it would only take a share of a single-CPU node.
if [[ "${E2E_SET}" == core ]]; then
	KUBECONFIG="${STATE}/kubeconfig" "${kubectl_bin}" -n lvms-system scale deployment lvms-evacuator \
		--replicas=0 >&2
fi
# In the package directory, as go test runs it (golden files under dev/e2e/testdata); kubectl finds
# the kubectl-lvms plugin on PATH.
(cd dev/e2e && PATH="${BIN}:${PATH}" KUBECTL="${kubectl_bin}" KUBECONFIG="${STATE}/kubeconfig" \
	E2E_READY_FILE="${STATE}/lvmcluster-ready" \
	"${BIN}/e2e.test" -test.count=1 -test.v -test.timeout "${timeout}" \
	-test.parallel "${parallel}" -test.skip '^TestUpgrade$' \
	${E2E_RUN:+-test.run "${E2E_RUN}"}) | tee "${BIN}/e2e.out" || rc=$?
count() { grep -c -E "^ *--- $1:" "${BIN}/e2e.out" || true; }
log "E2E_SET=${E2E_SET}: $(count PASS) tests passed, $(count FAIL) failed, $(count SKIP) skipped" \
	"($(grep -c 'in the full set only' "${BIN}/e2e.out" || true) of them in the full set only)"
if ((${rc:-0} != 0)); then exit "${rc}"; fi
# An E2E_RUN that matches no test runs nothing, and go test calls that a pass.
if ! grep -q '^--- PASS' "${BIN}/e2e.out"; then
	log "FAIL: no test ran${E2E_RUN:+ (E2E_RUN=${E2E_RUN} matches none; subtests are Test/Sub, e.g. TestVolumeFlows/Clone)}"
	exit 1
fi
