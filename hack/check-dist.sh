#!/usr/bin/env bash
# make check-dist: lints and renders the generated Helm chart with the real Helm CLI (built into
# the cache by hack/helm.sh): `helm lint --strict`, then `helm template` with the default values
# and with another namespace and an image digest, checking that both settings reach the objects,
# and with monitoring.enabled (ServiceMonitor, PrometheusRule), schedulerExtender.enabled,
# snapshotMetadata.enabled and evacuator.enabled (the optional components of config/components), and
# profiling.enabled.
# The OLM bundle is validated by go -C dev test ./internal/dist (operator-framework/api validators).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

helm="$(bash hack/helm.sh | tail -1)"
chart=charts/lvms
out="$(mktemp -d)"
trap 'rm -rf "${out}"' EXIT

"${helm}" lint --strict "${chart}"
"${helm}" template lvms "${chart}" --kube-version 1.37.0 --namespace lvms-system --include-crds >"${out}/default.yaml"
digest=sha256:0000000000000000000000000000000000000000000000000000000000000001
"${helm}" template lvms "${chart}" --kube-version 1.37.0 --namespace storage-x \
	--set image.repository=registry.example.test/lvms --set image.digest="${digest}" >"${out}/custom.yaml"

fail=0
# With default values the chart runs exactly the image dist/install.yaml pins.
pinned="$(grep -oE 'image: ghcr.io/lvm-operator/lvms[:@][^ ]+' dist/install.yaml | head -1 | cut -d' ' -f2)"
grep -q "image: '${pinned}'" "${out}/default.yaml" || { echo "check-dist: FAIL: the chart's default image is not ${pinned:-?} (dist/install.yaml)" >&2; fail=1; }
grep -q "image: 'registry.example.test/lvms@${digest}'" "${out}/custom.yaml" || { echo "check-dist: FAIL: image.digest does not reach the operator" >&2; fail=1; }
if grep -q "lvms-system" "${out}/custom.yaml"; then
	echo "check-dist: FAIL: a template still names lvms-system when installed into storage-x:" >&2
	grep -n "lvms-system" "${out}/custom.yaml" >&2
	fail=1
fi
# Monitoring is off by default; on, the alerts reach Prometheus with their own {{ $labels... }} intact.
"${helm}" template lvms "${chart}" --kube-version 1.37.0 --namespace lvms-system --set monitoring.enabled=true >"${out}/monitoring.yaml"
if grep -q "^kind: PrometheusRule" "${out}/default.yaml"; then
	echo "check-dist: FAIL: the chart renders a PrometheusRule with monitoring.enabled=false" >&2
	fail=1
fi
grep -q "^kind: ServiceMonitor" "${out}/monitoring.yaml" && grep -q '{{ $labels.node }}' "${out}/monitoring.yaml" ||
	{ echo "check-dist: FAIL: monitoring.enabled=true does not render the ServiceMonitor and the alerts' templates" >&2; fail=1; }
"${helm}" template lvms "${chart}" --kube-version 1.37.0 --namespace storage-x --set schedulerExtender.enabled=true \
	--set image.repository=registry.example.test/lvms --set image.digest="${digest}" >"${out}/extender.yaml"
if grep -q "lvms-scheduler\|pod-mutating-webhook" "${out}/default.yaml"; then
	echo "check-dist: FAIL: the chart renders the scheduler extender with schedulerExtender.enabled=false" >&2
	fail=1
fi
for want in "^kind: DaemonSet" "name: lvms-scheduler" "--pod-mutating-webhook" "name: pod-hook.topolvm.io" \
	"image: 'registry.example.test/lvms@${digest}'"; do
	grep -q -e "${want}" "${out}/extender.yaml" ||
		{ echo "check-dist: FAIL: schedulerExtender.enabled=true does not render ${want}" >&2; fail=1; }
done
if grep -q "lvms-system" "${out}/extender.yaml"; then
	echo "check-dist: FAIL: with the extender, a template still names lvms-system when installed into storage-x:" >&2
	grep -n "lvms-system" "${out}/extender.yaml" >&2
	fail=1
fi
# The snapshot metadata service: off by default; on (with the extender too, so the operator's
# Deployment is rendered with both flags), the operator runs with --snapshot-metadata (it creates
# the Deployment lvms-snapshot-metadata and its certificates itself) and the chart adds, in the
# release namespace, the ServiceAccount, the Service and the RBAC that Deployment needs.
"${helm}" template lvms "${chart}" --kube-version 1.37.0 --namespace storage-x --set snapshotMetadata.enabled=true \
	--set schedulerExtender.enabled=true \
	--set image.repository=registry.example.test/lvms --set image.digest="${digest}" >"${out}/snapmeta.yaml"
# (An object named lvms-snapshot-metadata; the node agents' NetworkPolicy names its pods' label as a peer.)
if grep -q -e "^  name: lvms-snapshot-metadata" -e "--snapshot-metadata" -e "snapshotmetadataservices" \
	"${out}/default.yaml" "${out}/extender.yaml"; then
	echo "check-dist: FAIL: the chart renders the snapshot metadata service with snapshotMetadata.enabled=false" >&2
	fail=1
fi
for want in "name: lvms-snapshot-metadata$" "- --snapshot-metadata$" "- --pod-mutating-webhook$" \
	"port: 6443$" "targetPort: grpc$" "- snapshotmetadataservices$" \
	"image: 'registry.example.test/lvms@${digest}'"; do
	grep -q -e "${want}" "${out}/snapmeta.yaml" ||
		{ echo "check-dist: FAIL: snapshotMetadata.enabled=true does not render ${want}" >&2; fail=1; }
done
if grep -q "lvms-system" "${out}/snapmeta.yaml"; then
	echo "check-dist: FAIL: with the snapshot metadata service, a template still names lvms-system when installed into storage-x:" >&2
	grep -n "lvms-system" "${out}/snapmeta.yaml" >&2
	fail=1
fi
# The evacuator: off by default; on, the chart adds in the release namespace its Deployment (running
# `lvms evacuator` from the release's image, so the image appears once more than without it), its
# ServiceAccount and its RBAC, and leaves the rest as it is.
"${helm}" template lvms "${chart}" --kube-version 1.37.0 --namespace storage-x --set evacuator.enabled=true \
	--set image.repository=registry.example.test/lvms --set image.digest="${digest}" >"${out}/evacuator.yaml"
if grep -q "lvms-evacuator" "${out}/default.yaml" "${out}/custom.yaml" "${out}/extender.yaml" "${out}/snapmeta.yaml"; then
	echo "check-dist: FAIL: the chart renders the evacuator with evacuator.enabled=false" >&2
	fail=1
fi
for want in "name: lvms-evacuator$" "name: lvms-evacuator-leader-election$" "- evacuator$" \
	"serviceAccountName: lvms-evacuator$" "- pods/eviction$"; do
	grep -q -e "${want}" "${out}/evacuator.yaml" ||
		{ echo "check-dist: FAIL: evacuator.enabled=true does not render ${want}" >&2; fail=1; }
done
# In storage-x: the ServiceAccount, the Deployment, the NetworkPolicy and the subjects of both bindings.
in_ns="$(grep -A1 -e "^  name: lvms-evacuator$" "${out}/evacuator.yaml" | grep -c "^  namespace: 'storage-x'$" || true)"
[[ "${in_ns}" == 5 ]] ||
	{ echo "check-dist: FAIL: ${in_ns} of the evacuator's ServiceAccount, Deployment, NetworkPolicy and binding subjects are in storage-x, want 5" >&2; fail=1; }
images() { grep -c "image: 'registry.example.test/lvms@${digest}'" "$1" || true; }
[[ "$(images "${out}/evacuator.yaml")" == "$(($(images "${out}/custom.yaml") + 1))" ]] ||
	{ echo "check-dist: FAIL: with evacuator.enabled=true the evacuator does not run the release's image" >&2; fail=1; }
if grep -q "lvms-system" "${out}/evacuator.yaml"; then
	echo "check-dist: FAIL: with the evacuator, a template still names lvms-system when installed into storage-x:" >&2
	grep -n "lvms-system" "${out}/evacuator.yaml" >&2
	fail=1
fi
# Profiling: off by default; on, the operator's LVMS_PROFILING is "true" (it passes --profiling on
# to the node agents).
"${helm}" template lvms "${chart}" --kube-version 1.37.0 --namespace lvms-system --set profiling.enabled=true >"${out}/profiling.yaml"
for f in default:false profiling:true; do
	grep -A1 -e "- name: LVMS_PROFILING$" "${out}/${f%%:*}.yaml" | grep -q -e "value: '${f#*:}'$" ||
		{ echo "check-dist: FAIL: the ${f%%:*} values do not render LVMS_PROFILING='${f#*:}'" >&2; fail=1; }
done
crds="$(grep -c '^kind: CustomResourceDefinition' "${out}/default.yaml" || true)"
[[ "${crds}" == 4 ]] || { echo "check-dist: FAIL: helm template --include-crds gave ${crds} CRDs, want 4" >&2; fail=1; }
[[ ${fail} -eq 0 ]] || exit 1
echo "check-dist: helm lint and helm template OK ($(grep -c '^kind:' "${out}/default.yaml") objects)"
