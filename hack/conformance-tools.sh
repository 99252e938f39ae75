#!/usr/bin/env bash
# Builds the Kubernetes storage e2e suite (the external-driver tests of k8s.io/kubernetes/test/e2e,
# which CSI drivers certify against: e2e.test -storage.testdriver=<driver definition>) for the pinned
# Kubernetes version into a cache directory outside the repository, reuses it when present, and prints
# that directory as the LAST line of stdout. It holds e2e-storage.test, agnhost (the program of the
# suite's agnhost image, k8s.io/kubernetes/test/images/agnhost) and ginkgo (the CLI that runs the
# suite in parallel processes), all of the same module graph. Everything else goes to stderr.
#
# Why not upstream's e2e.test: it links every suite of the project (a long cold build); this binary
# links the test framework and the storage suites only, in a throw-away main module in the cache
# that requires k8s.io/kubernetes with the replaces hack/kube-assets.sh derives (it copies that go.mod).
# Its test main is written below: it reads the framework's flags, registers the suite's manifests
# embedded in the binary (test/e2e/testing-manifests, which provisioning's "any volume data source"
# reads, as upstream's e2e.test does) and runs the ginkgo suite, and -list-images prints the images
# the suite pulls (framework.AfterReadingAllFlags). RECIPE names that test main: a cache built from
# another one is built again.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
KUBE_VERSION="${KUBE_VERSION:-v1.37.0}"
CACHE_ROOT="${LVMS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms}"
OUT="${CACHE_ROOT}/conformance/${KUBE_VERSION}"
SRC="${CACHE_ROOT}/conformance-src/${KUBE_VERSION}"
BIN="${OUT}/e2e-storage.test"
RECIPE="2-embedded-manifests"

log() { echo "conformance-tools: $*" >&2; }

if [[ -x "${BIN}" && -x "${OUT}/agnhost" && -x "${OUT}/ginkgo" && "$(cat "${OUT}/.complete" 2>/dev/null)" == "${RECIPE}" ]]; then
	log "reusing ${OUT}"
	echo "${OUT}"
	exit 0
fi

bash hack/kube-assets.sh >/dev/null
KUBE_SRC="${CACHE_ROOT}/kube-assets-src/${KUBE_VERSION}-etcd${ETCD_VERSION:-v3.7.0}/kube"
[[ -f "${KUBE_SRC}/go.mod" ]] || { log "no ${KUBE_SRC}/go.mod: hack/kube-assets.sh did not leave its module"; exit 1; }
mkdir -p "${OUT}" "${SRC}/storage"
sed 's#^module .*#module lvms.local/storage-e2e#' "${KUBE_SRC}/go.mod" >"${SRC}/go.mod"
cp "${KUBE_SRC}/go.sum" "${SRC}/go.sum" 2>/dev/null || true
cat >"${SRC}/storage/storage_test.go" <<'GO'
// Package storage runs Kubernetes' storage e2e suites against the external CSI drivers named with
// -storage.testdriver (k8s.io/kubernetes/test/e2e/storage/external).
package storage

import (
	"flag"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/kubernetes/test/e2e/storage/external"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
)

func TestMain(m *testing.M) {
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	framework.AfterReadingAllFlags(&framework.TestContext)
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	os.Exit(m.Run())
}

func TestStorage(t *testing.T) {
	gomega.RegisterFailHandler(framework.Fail)
	ginkgo.RunSpecs(t, "Kubernetes storage e2e for lvms")
}
GO
log "go mod tidy (storage e2e of k8s.io/kubernetes ${KUBE_VERSION}, agnhost and ginkgo as tools)"
(cd "${SRC}" && go mod tidy >&2)
# ginkgo's CLI at the version the suite requires (a newer one would also upgrade the suite's library).
ginkgo_version="$(awk '$1 == "github.com/onsi/ginkgo/v2" {print $2; exit}' "${SRC}/go.mod")"
[[ -n "${ginkgo_version}" ]] || { log "no github.com/onsi/ginkgo/v2 in ${SRC}/go.mod"; exit 1; }
(cd "${SRC}" && go get -tool "k8s.io/kubernetes/test/images/agnhost@${KUBE_VERSION}" \
	"github.com/onsi/ginkgo/v2/ginkgo@${ginkgo_version}" >&2 && go mod tidy >&2)
log "building e2e-storage.test (several minutes when the Go build cache is cold)"
(cd "${SRC}" && CGO_ENABLED=0 go test -c -trimpath -o "${BIN}.tmp" ./storage >&2)
mv "${BIN}.tmp" "${BIN}"
for tool in k8s.io/kubernetes/test/images/agnhost github.com/onsi/ginkgo/v2/ginkgo; do
	(cd "${SRC}" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${OUT}/$(basename "${tool}")" "${tool}" >&2)
done
echo "${RECIPE}" >"${OUT}/.complete"
log "built ${BIN}"
echo "${OUT}"
