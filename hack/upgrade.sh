#!/usr/bin/env bash
# Runs the upgrade test (dev/e2e TestUpgrade, docs/upgrade.md): the previous release of the product,
# the commit dev/e2e/testdata/upgrade-from names (or UPGRADE_FROM), is checked out into the cache
# and its image built there by its own image builder (under the tag ghcr.io/lvm-operator/lvms:upgrade-from,
# so that it lives beside this tree's image on the nodes); a fresh 2-node dev cluster comes up without
# the product, with both images imported; TestUpgrade installs the previous release, creates claims of
# every kind and upgrades the install in place, once per install path (UPGRADE_PATHS, default
# "helm kustomize"); the cluster is torn down after.
#
# Environment: UPGRADE_FROM (a commit of this repository's history), UPGRADE_PATHS,
# UPGRADE_STATE_DIR (the cluster's state directory), UPGRADE_KEEP=1 keeps the cluster.
# This tree's images come from _output/images (make upgrade builds them first).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
STATE="${UPGRADE_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms/upgrade-cluster}"
FROM="${UPGRADE_FROM:-$(grep -v '^#' dev/e2e/testdata/upgrade-from | head -1)}"
BIN="$(mktemp -d)"
LVMS_DEV="${BIN}/lvms-dev"
log() { echo "upgrade: $*" >&2; }

if ! commit="$(git rev-parse --verify --quiet "${FROM}^{commit}")"; then
	# A shallow clone may not have it: ask the remote for that one commit.
	git fetch --quiet --depth=1 origin "${FROM}" >&2 || true
	commit="$(git rev-parse --verify --quiet "${FROM}^{commit}")" || {
		log "FAIL: commit ${FROM} (dev/e2e/testdata/upgrade-from) is not in this repository's history"
		exit 1
	}
fi
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/lvms/upgrade/${commit}"
OLD="${CACHE}/src"
OLD_IMAGES="${CACHE}/images"

# The previous release's tree and image, built once per commit. The tree is the commit's files
# (git archive: a shallow clone has the commit after the fetch above, but no clone of it would);
# its image builder needs a git work tree and the commit time, not the history.
if [[ ! -f "${OLD}/.upgrade-from-ready" ]]; then
	rm -rf "${OLD}"
	mkdir -p "${OLD}"
	git archive "${commit}" | tar -x -C "${OLD}"
	git -C "${OLD}" init --quiet
	touch "${OLD}/.upgrade-from-ready"
fi
if [[ ! -s "${OLD_IMAGES}/lvms.digest" ]]; then
	log "building the image of ${commit} with its own image builder"
	version="$(git describe --tags --always "${commit}")"
	epoch="$(git log -1 --format=%ct "${commit}")"
	(cd "${OLD}" && GOFLAGS=-buildvcs=false SOURCE_DATE_EPOCH="${epoch}" go run ./cmd/lvms-dev image build \
		--only lvms --out "${OLD_IMAGES}" --lvms-ref ghcr.io/lvm-operator/lvms:upgrade-from \
		--version "${version}" --commit "${commit}") >&2
fi
log "from ${commit} ($(cat "${OLD_IMAGES}/lvms.digest")) to $(git rev-parse HEAD) ($(cat _output/images/lvms.digest))"

# shellcheck source=hack/lib/devcluster.sh
source hack/lib/devcluster.sh
finish() { devcluster_finish $? "${UPGRADE_KEEP:-}" "${LVMS_DEV}" "${STATE}" "${BIN}" "logs: ${STATE}/logs"; }

go -C dev build -o "${LVMS_DEV}" ./cmd/lvms-dev
go -C dev test -tags e2e -c -o "${BIN}/e2e.test" ./e2e/
helm="$(bash hack/helm.sh | tail -1)"
kubectl_bin="$(bash hack/kube-assets.sh | tail -1)/kubectl"
from_digest="$(cat "${OLD_IMAGES}/lvms.digest")"
to_digest="$(cat _output/images/lvms.digest)"
trap finish EXIT
"${LVMS_DEV}" down --state-dir "${STATE}" >/dev/null 2>&1 || true
"${LVMS_DEV}" up --state-dir "${STATE}" --nodes 2 --disks 4 --disk-size 8 --no-product \
	--extra-images-dir "${OLD_IMAGES}" >&2
(cd dev/e2e && KUBECTL="${kubectl_bin}" HELM="${helm}" KUBECONFIG="${STATE}/kubeconfig" \
	UPGRADE_FROM_DIR="${OLD}" UPGRADE_FROM_DIGEST="${from_digest}" UPGRADE_TO_DIGEST="${to_digest}" \
	UPGRADE_PATHS="${UPGRADE_PATHS:-helm kustomize}" \
	"${BIN}/e2e.test" -test.count=1 -test.v -test.timeout "${UPGRADE_TIMEOUT:-50m}" \
	-test.run '^TestUpgrade$') | tee "${BIN}/upgrade.out"
grep -q '^--- PASS: TestUpgrade' "${BIN}/upgrade.out" || { log "FAIL: TestUpgrade did not pass"; exit 1; }
