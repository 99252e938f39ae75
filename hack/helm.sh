#!/usr/bin/env bash
# Builds the pinned Helm CLI into the cache (hack/go-tool.sh) and prints its path as the LAST line
# of stdout. make check-dist uses it for `helm lint` and `helm template` of charts/lvms.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/go-tool.sh" helm "helm.sh/helm/v3/cmd/helm@${HELM_VERSION:-v3.22.0}"
