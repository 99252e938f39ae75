#!/usr/bin/env bash
# make verify: regenerates code and manifests and fails if anything they produce differs from the
# tree, then checks the package import graph (docs/import-graph.md), the metric names of the alerts
# and the dashboard (dev/internal/monitoring), gofmt, go vet, go mod tidy and golangci-lint.
set -euo pipefail
cd "$(dirname "$0")/.."

GENERATED=(api config/crd/bases config/rbac config/webhook docs/rbac.md internal/lvmd/proto dist charts/lvms bundle)
fail=0

snapshot="$(mktemp -d)"
trap 'rm -rf "${snapshot}"' EXIT
for p in "${GENERATED[@]}"; do
	if [[ -e "$p" ]]; then
		mkdir -p "${snapshot}/$(dirname "$p")"
		cp -a "$p" "${snapshot}/$p"
	fi
done

echo "verify: regenerating code and manifests" >&2
make --no-print-directory generate manifests >/dev/null

for p in "${GENERATED[@]}"; do
	if ! diff -ruN "${snapshot}/$p" "$p" >"${snapshot}/diff.txt" 2>&1; then
		echo "verify: FAIL: generated files under $p are stale; run 'make generate manifests' and commit:" >&2
		head -40 "${snapshot}/diff.txt" >&2
		fail=1
	fi
done

echo "verify: kustomize build config/default" >&2
kubectl="$(bash hack/kube-assets.sh | tail -1)/kubectl"
if ! "${kubectl}" kustomize config/default >/dev/null; then
	echo "verify: FAIL: config/default does not build" >&2
	fail=1
fi

echo "verify: the product binary holds no development harness and no kubectl plugin" >&2
if harness="$(go list -deps ./cmd/lvms | grep -E 'lvm-operator/dev(/|$)|internal/testing|/test/|internal/kubectlplugin|k8s.io/cli-runtime')"; then
	echo "verify: FAIL: ./cmd/lvms depends on development or test packages:" >&2
	echo "${harness}" >&2
	fail=1
fi

echo "verify: the product binary holds no API server stack (k8s.io/apiserver, cel-go, OpenTelemetry)" >&2
# internal/metricsauth replaces controller-runtime's metrics filters, which pulled them in: 182
# packages and 8.8 MB that every process of the product loaded and initialised.
if heavy="$(go list -deps ./cmd/lvms | grep -E '^k8s.io/apiserver/|^github.com/google/cel-go/|^go.opentelemetry.io/')"; then
	echo "verify: FAIL: ./cmd/lvms depends on:" >&2
	echo "${heavy}" | head -20 >&2
	fail=1
fi

echo "verify: docs/import-graph.md" >&2
if ! diff -u docs/import-graph.md <(bash hack/import-graph.sh) >"${snapshot}/graph.diff" 2>&1; then
	echo "verify: FAIL: docs/import-graph.md is stale; run 'make import-graph' and commit:" >&2
	head -40 "${snapshot}/graph.diff" >&2
	fail=1
fi

echo "verify: the alerts and the dashboard use only exported metric names" >&2
go -C dev test -count=1 ./internal/monitoring/ >&2 || fail=1

echo "verify: gofmt" >&2
unformatted="$(git ls-files -co --exclude-standard '*.go' | xargs -r gofmt -l)"
if [[ -n "${unformatted}" ]]; then
	echo "verify: FAIL: gofmt would change:" >&2
	echo "${unformatted}" >&2
	fail=1
fi

# Both modules: the product's (the root) and the dev tooling's (dev/).
echo "verify: go mod tidy" >&2
for mod in . dev; do
	if ! go -C "${mod}" mod tidy -diff >&2; then
		echo "verify: FAIL: ${mod}/go.mod or go.sum is not tidy; run 'go -C ${mod} mod tidy'" >&2
		fail=1
	fi
done

echo "verify: go vet" >&2
go vet ./... || fail=1
go vet -tags guest ./... || fail=1
go -C dev vet ./... || fail=1
go -C dev vet -tags guest ./... || fail=1
go -C dev vet -tags e2e ./e2e/ || fail=1
go -C dev vet -tags sanity ./sanity/ || fail=1

echo "verify: golangci-lint" >&2
lint="$(bash hack/golangci-lint.sh | tail -1)"
"${lint}" run ./... || fail=1
(cd dev && "${lint}" run ./...) || fail=1

if [[ "${fail}" -ne 0 ]]; then
	echo "verify: FAILED" >&2
	exit 1
fi
echo "verify: OK" >&2
