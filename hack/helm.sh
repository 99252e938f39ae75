#!/usr/bin/env bash
# Builds the pinned Helm CLI from the Go module proxy into a cache directory outside the repository
# (once per version) and prints the binary's path as the LAST line of stdout. make test uses it for
# `helm lint` and `helm template` of charts/lvms; it is not a go.mod dependency.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
CACHE_ROOT="${LVMS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms}"
GOVERSION="$(go env GOVERSION)"
OUT="${CACHE_ROOT}/tools/helm-${HELM_VERSION}-${GOVERSION}"

if [[ ! -x "${OUT}/helm" ]]; then
	echo "helm: building ${HELM_VERSION} (first time only)" >&2
	mkdir -p "${OUT}"
	GOBIN="${OUT}" GOFLAGS=-mod=mod go install \
		"helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" >&2
fi
echo "${OUT}/helm"
