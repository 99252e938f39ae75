#!/usr/bin/env bash
# Runs lvms-dev, the development tool (the dev tooling's own Go module in dev/), from the repository
# root with the given arguments: `bash hack/lvms-dev.sh up`, `... image build`, `... demo`. The binary
# is built into _output/bin first (go's build cache makes a rebuild cheap).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
go -C dev build -o "${PWD}/_output/bin/lvms-dev" ./cmd/lvms-dev
exec _output/bin/lvms-dev "$@"
