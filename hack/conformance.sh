#!/usr/bin/env bash
# Runs Kubernetes' storage e2e suite (docs/conformance.md) against the product on a fresh 2-node dev
# cluster: builds the suite and its images (hack/conformance-tools.sh, lvms-dev image conformance),
# brings the cluster up with them, applies test/conformance/lvmcluster.yaml, runs the suite once per
# driver definition of test/conformance (thin, thick) side by side, each in CONFORMANCE_PROCS ginkgo
# processes, writes the JUnit reports under _output/conformance/, prints passed/failed/skipped per
# suite and class (lvms-dev conformance-report) and tears the cluster down.
#
# Environment: CONFORMANCE_SUBSET=1 runs the curated subset of make test (test/conformance/subset.txt)
# instead of every spec; CONFORMANCE_FOCUS / CONFORMANCE_SKIP override the ginkgo focus and skip;
# CONFORMANCE_CLASSES (default "thin thick"); CONFORMANCE_PROCS (default 2, the subset 3); CONFORMANCE_KEEP=1 keeps
# the cluster; CONFORMANCE_STATE_DIR is its state directory. The product images come from
# _output/images (make images; make conformance builds them first).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
STATE="${CONFORMANCE_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms/conformance-cluster}"
# Absolute: ginkgo runs the suite in the directory of its binary.
OUT="${PWD}/_output/conformance"
IMAGES="${PWD}/_output/conformance-images"
CLASSES="${CONFORMANCE_CLASSES:-thin thick}"
PROCS="${CONFORMANCE_PROCS:-2}"
[[ "${CONFORMANCE_SUBSET:-}" == 1 ]] && PROCS="${CONFORMANCE_PROCS:-3}"
BIN="$(mktemp -d)"
LVMS_DEV="${BIN}/lvms-dev"
log() { echo "conformance: $*" >&2; }

# [Disruptive] specs restart the kubelet over SSH with systemctl: the dev cluster's UML nodes have
# neither (dev/e2e's TestRestart* restart the node agent and the kubelet's volumes instead).
SKIP="${CONFORMANCE_SKIP:-\[Disruptive\]}"
# Specs that create cluster-scoped objects of fixed names cannot run in two classes' suites at once:
# "any volume data source" creates the CRD hellos.hello.example.com, and the second class's copy
# fails with "already exists". The classes' suites run side by side without them, and then they run
# one class after the other (cluster_wide_pass).
CLUSTER_WIDE='should provision storage with any volume data source'
CLUSTER_WIDE_SPEC="External Storage [Driver: topolvm.io] [Testpattern: Dynamic PV (default fs)] provisioning ${CLUSTER_WIDE} [Serial]"
# focus prints the ginkgo focus of a class: CONFORMANCE_FOCUS, or with CONFORMANCE_SUBSET=1 the
# expressions test/conformance/subset.txt lists for the class, or every spec of the external driver.
focus() {
	if [[ -n "${CONFORMANCE_FOCUS:-}" ]]; then
		echo "${CONFORMANCE_FOCUS}"
	elif [[ "${CONFORMANCE_SUBSET:-}" == 1 ]]; then
		awk -v class="$1" '!/^#/ && NF { n = split($1, c, ","); for (i = 1; i <= n; i++) if (c[i] == class) { sub(/^[^ ]+ /, ""); print } }' \
			test/conformance/subset.txt | paste -sd '|'
	else
		echo External.Storage
	fi
}

# shellcheck source=hack/lib/devcluster.sh
source hack/lib/devcluster.sh
finish() {
	devcluster_finish $? "${CONFORMANCE_KEEP:-}" "${LVMS_DEV}" "${STATE}" "${BIN}" \
		"reports: ${OUT}; cluster logs: ${STATE}/logs"
}

tools="$(bash hack/conformance-tools.sh | tail -1)"
go -C dev build -o "${LVMS_DEV}" ./cmd/lvms-dev
refs() { "${tools}/e2e-storage.test" -list-images | grep -E "$1" | paste -sd, || true; }
# Images of Debian packages for the specs that need GNU tools or run a script in nginx's image.
debian=()
for ref in $(refs '^registry\.k8s\.io/e2e-test-images/glibc-dns-testing:' | tr , ' '); do
	debian+=(--debian "${ref}=bash,coreutils,dash,grep,sed,findutils")
done
for ref in $(refs '^registry\.k8s\.io/e2e-test-images/nginx:' | tr , ' '); do
	debian+=(--debian "${ref}=nginx-light")
done
# The hello populator that provisioning's "any volume data source" spec deploys from its manifest
# (not in -list-images): the reference is the manifest's, in the k8s.io/kubernetes module the suite is
# built from (conformance-tools.sh names its directory after that version); the image is our own
# implementation (dev/internal/image/hellopopulator), since the Go module proxy refuses upstream's
# module. The spec's volume-data-source-validator pod cannot pull its image; the spec does not need it.
kube_dir="$(cd "${BIN}" && go mod download -json "k8s.io/kubernetes@$(basename "${tools}")" |
	awk -F'"' '$2 == "Dir" {print $4}')"
populator_manifest="${kube_dir}/test/e2e/testing-manifests/storage-csi/any-volume-datasource/hello-populator-deploy.yaml"
populator="$(awk '$1 == "image:" {print $2; exit}' "${populator_manifest}")"
[[ -n "${populator}" ]] || { log "FAIL: no image in ${populator_manifest}"; exit 1; }
"${LVMS_DEV}" image conformance --out "${IMAGES}" --agnhost-binary "${tools}/agnhost" \
	--busybox "$(refs '^registry\.k8s\.io/e2e-test-images/busybox:')" \
	--agnhost "$(refs '^registry\.k8s\.io/e2e-test-images/agnhost:')" \
	--pause "$(refs '^registry\.k8s\.io/pause:')" --hello-populator "${populator}" "${debian[@]}" >&2

trap finish EXIT
"${LVMS_DEV}" down --state-dir "${STATE}" >/dev/null 2>&1 || true
"${LVMS_DEV}" up --state-dir "${STATE}" --nodes 2 --disks 3 --disk-size 8 --extra-images-dir "${IMAGES}" >&2
export KUBECONFIG="${STATE}/kubeconfig"
kubectl="$(bash hack/kube-assets.sh | tail -1)/kubectl"
# The operator's Pod can turn unready for a while after its Deployment became Available (its CSI
# sidecars restart until the operator serves their socket), and then the LVMCluster webhook has no
# endpoint: retry the apply for up to 5 min, as a user would.
for attempt in $(seq 1 30); do
	"${kubectl}" apply -f test/conformance/lvmcluster.yaml >&2 && break
	[[ "${attempt}" -lt 30 ]] || { log "FAIL: the LVMCluster could not be applied for 5 min"; exit 1; }
	sleep 10
done
"${kubectl}" -n lvms-system wait lvmcluster/conformance --for=jsonpath='{.status.state}'=Ready --timeout=10m >&2

rm -rf "${OUT}"
mkdir -p "${OUT}"
# run_suite CLASS FOCUS SKIP REPORT LOG runs the precompiled suite of CLASS in PROCS ginkgo
# processes ([Serial] specs last, alone), its JUnit report in OUT/CLASS/REPORT and its output in
# OUT/CLASS/LOG; the flags after -- are the framework's.
run_suite() {
	mkdir -p "${OUT}/$1"
	"${tools}/ginkgo" --procs="${PROCS}" --timeout=3h --focus="$2" --skip="$3" \
		--junit-report="${OUT}/$1/$4" --no-color \
		"${tools}/e2e-storage.test" -- -kubeconfig="${KUBECONFIG}" \
		-storage.testdriver="${PWD}/test/conformance/$1.yaml" \
		>"${OUT}/$1/$5" 2>&1
}
# cluster_wide_pass tells whether the CLUSTER_WIDE specs are selected: not in the subset, and with
# CONFORMANCE_FOCUS only when it matches them.
cluster_wide_pass() {
	[[ "${CONFORMANCE_SUBSET:-}" != 1 ]] || return 1
	[[ -z "${CONFORMANCE_FOCUS:-}" ]] || grep -Eq -- "${CONFORMANCE_FOCUS}" <<<"${CLUSTER_WIDE_SPEC}"
}
start=${SECONDS}
pids=()
for class in ${CLASSES}; do
	focus="$(focus "${class}")"
	[[ -n "${focus}" ]] || { log "FAIL: no spec for class ${class} in test/conformance/subset.txt"; exit 1; }
	run_suite "${class}" "${focus}" "${SKIP}|${CLUSTER_WIDE}" junit.xml suite.log &
	pids+=($!)
	log "class ${class}: ginkgo pid $!, log ${OUT}/${class}/suite.log"
done
rc=0
for pid in "${pids[@]}"; do wait "${pid}" || rc=1; done
reports=()
for class in ${CLASSES}; do reports+=("--report" "${class}=${OUT}/${class}/junit.xml"); done
if cluster_wide_pass; then
	for class in ${CLASSES}; do
		log "class ${class}: the specs that create cluster-scoped objects, log ${OUT}/${class}/cluster-wide.log"
		run_suite "${class}" "${CLUSTER_WIDE}" "${SKIP}" cluster-wide.xml cluster-wide.log || rc=1
		reports+=("--report" "${class}=${OUT}/${class}/cluster-wide.xml")
	done
fi
log "suite ran in $((SECONDS - start)) s"
"${LVMS_DEV}" conformance-report "${reports[@]}" | tee "${OUT}/summary.txt"
exit "${rc}"
