#!/usr/bin/env bash
# Builds the pinned golangci-lint from the Go module proxy into a cache directory outside the
# repository (once per version) and prints the binary's path as the LAST line of stdout.
# It is a separate build, not a `go tool` dependency, so its large dependency graph does not enter
# our go.mod.
set -euo pipefail

GOLANGCI_LINT_VERSION="${GOLANGCI_LINT_VERSION:-v2.15.0}"
CACHE_ROOT="${LVMS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms}"
GOVERSION="$(go env GOVERSION)"
OUT="${CACHE_ROOT}/tools/golangci-lint-${GOLANGCI_LINT_VERSION}-${GOVERSION}"

if [[ ! -x "${OUT}/golangci-lint" ]]; then
	echo "golangci-lint: building ${GOLANGCI_LINT_VERSION} (first time only)" >&2
	mkdir -p "${OUT}"
	GOBIN="${OUT}" GOFLAGS=-mod=mod go install \
		"github.com/golangci/golangci-lint/v2/cmd/golangci-lint@${GOLANGCI_LINT_VERSION}" >&2
fi
echo "${OUT}/golangci-lint"
