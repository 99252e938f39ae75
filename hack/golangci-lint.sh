#!/usr/bin/env bash
# Builds the pinned golangci-lint into the cache (hack/go-tool.sh) and prints its path as the LAST
# line of stdout.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/go-tool.sh" golangci-lint \
	"github.com/golangci/golangci-lint/v2/cmd/golangci-lint@${GOLANGCI_LINT_VERSION:-v2.15.0}"
