#!/usr/bin/env bash
# Usage: hack/go-tool.sh NAME PACKAGE@VERSION
# Builds a pinned Go tool from the module proxy into a cache directory outside the repository
# (once per version and Go version) and prints the binary's path as the LAST line of stdout. Tools
# built this way (golangci-lint, helm) keep their large dependency graphs out of our go.mod.
set -euo pipefail

name="$1"
pkg="$2"
version="${pkg##*@}"
CACHE_ROOT="${LVMS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms}"
OUT="${CACHE_ROOT}/tools/${name}-${version}-$(go env GOVERSION)"

if [[ ! -x "${OUT}/${name}" ]]; then
	echo "${name}: building ${version} (first time only)" >&2
	mkdir -p "${OUT}"
	GOBIN="${OUT}" GOFLAGS=-mod=mod go install "${pkg}" >&2
fi
echo "${OUT}/${name}"
