#!/usr/bin/env bash
# Builds the pinned promtool (Prometheus' rule checker and unit tester) into the cache
# (hack/go-tool.sh) and prints its path as the LAST line of stdout. hack/test-rules.sh uses it.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/go-tool.sh" promtool \
	"github.com/prometheus/prometheus/cmd/promtool@${PROMETHEUS_VERSION:-v0.316.0}"
