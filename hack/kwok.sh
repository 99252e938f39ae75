#!/usr/bin/env bash
# Builds kwok (sigs.k8s.io/kwok, the node simulator of the control-plane scale benchmark,
# dev/bench/scale.sh) from the Go module proxy into a per-version cache directory outside the
# repository, reuses it once built, and prints the binary's path as the LAST line of stdout.
# Development tooling only: kwok never enters the product or its image.
set -euo pipefail

KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
CACHE_ROOT="${LVMS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms}"
OUT="${CACHE_ROOT}/kwok/${KWOK_VERSION}"

if [[ ! -x "${OUT}/kwok" || ! -e "${OUT}/.complete" ]]; then
	echo "kwok: building sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}" >&2
	mkdir -p "${OUT}"
	GOBIN="${OUT}" CGO_ENABLED=0 GOFLAGS=-trimpath go install "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}" >&2
	"${OUT}/kwok" --version >&2
	touch "${OUT}/.complete"
fi
echo "${OUT}/kwok"
