# lvms — LVM storage for Kubernetes. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

MODULE      := github.com/lvm-operator/lvm-operator
GIT_COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
LDFLAGS     := -X $(MODULE)/internal/version.Version=$(VERSION) -X $(MODULE)/internal/version.GitCommit=$(GIT_COMMIT)
CONTROLLER_GEN := go tool controller-gen
GO_TEST_FLAGS ?=
RELEASE_VERSION ?= 0.1.0

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-16s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

.PHONY: demo
demo: ## Bring up a local cluster on real lvm2 and walk a PVC through its life (KEEP=1 leaves it up; docs/demo.md).
	$(MAKE) images
	bash hack/uml-deps.sh
	KEEP=$(KEEP) bash hack/lvms-dev.sh demo

##@ Build

.PHONY: build
build: ## Build bin/lvms.
	go build -ldflags "$(LDFLAGS)" -o bin/lvms ./cmd/lvms

.PHONY: kubectl-lvms
kubectl-lvms: ## Build bin/kubectl-lvms, the kubectl plugin (kubectl lvms status|disks|volumes|why; docs/kubectl-lvms.md).
	go build -ldflags "$(LDFLAGS)" -o bin/kubectl-lvms ./cmd/kubectl-lvms

.PHONY: image
image: ## Build the product image ghcr.io/lvm-operator/lvms as an OCI archive in _output/images, reproducibly, without Docker (docs/image.md).
	bash hack/lvms-dev.sh image build --only lvms --version "$(VERSION)" --commit "$(GIT_COMMIT)"

.PHONY: images
images: ## Build every image of the local cluster (lvms, workload, pause, CSI sidecars via hack/csi-tools.sh) into _output/images.
	bash hack/lvms-dev.sh image build --version "$(VERSION)" --commit "$(GIT_COMMIT)"

.PHONY: pin-image
pin-image: ## Build the lvms image and pin its digest in config/default (then make dist): for a release, after make push.
	$(MAKE) image
	digest="$$(grep -oE 'sha256:[0-9a-f]{64}' _output/images/lvms.digest | head -1)"; \
	[[ -n "$${digest}" ]] || { echo "pin-image: no digest in _output/images/lvms.digest" >&2; exit 1; }; \
	sed -i -E "s/^(  )(newTag|digest): .*/\1digest: $${digest}/" config/default/kustomization.yaml; \
	echo "pin-image: config/default pins ghcr.io/lvm-operator/lvms@$${digest}"
	$(MAKE) dist

.PHONY: push
push: ## Build the product image and push it to IMG=registry/repo:tag (credentials from ~/.docker/config.json).
	@[[ -n "$(IMG)" ]] || { echo "usage: make push IMG=registry/repo:tag" >&2; exit 1; }
	$(MAKE) image
	bash hack/lvms-dev.sh image push --ref "$(IMG)" --archive _output/images/lvms.tar

##@ Code generation

.PHONY: generate
generate: ## Generate deepcopy and apply-configuration code for the API, and lvmd's gRPC code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) applyconfiguration:headerFile=hack/boilerplate.go.txt paths=./api/...
	bash hack/protoc.sh

.PHONY: manifests
manifests: ## Generate CRDs, RBAC and webhook manifests under config/, and docs/rbac.md from the RBAC.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=lvms-operator paths=./cmd/lvms/... paths=./internal/operator/... paths=./internal/controller/lvmcluster/... paths=./internal/controller/noderemoval/... paths=./internal/controller/vgcleanup/... paths=./internal/controller/claimevents/... paths=./internal/csi/controller/... paths=./internal/controller/transfertoken/... paths=./internal/webhook/... output:rbac:artifacts:config=config/rbac/operator
	$(CONTROLLER_GEN) rbac:roleName=lvms-node paths=./internal/controller/vgmanager/... paths=./internal/controller/logicalvolume/... paths=./internal/nodeagent/... output:rbac:artifacts:config=config/rbac/node
	$(CONTROLLER_GEN) webhook paths=./internal/... output:webhook:artifacts:config=config/webhook
	bash hack/lvms-dev.sh rbac-doc
	$(MAKE) --no-print-directory dist

.PHONY: dist
dist: ## Render dist/install.yaml, the Helm chart charts/lvms and the OLM bundle bundle/ from config/ (never edit those by hand).
	bash hack/lvms-dev.sh dist --version $(RELEASE_VERSION)

.PHONY: check-dist
check-dist: ## helm lint + helm template of charts/lvms (Helm built into the cache); the bundle is validated by go -C dev test ./internal/dist.
	bash hack/check-dist.sh

##@ Verification and tests

.PHONY: verify
verify: ## Fail on stale generated code, gofmt, go vet, go mod tidy or golangci-lint findings.
	bash hack/verify.sh

.PHONY: import-graph
import-graph: ## Regenerate docs/import-graph.md (the module's package import graph, from go list).
	bash hack/import-graph.sh > docs/import-graph.md

.PHONY: fmt
fmt: ## Apply the formatters of .golangci.yml (gofmt, goimports, golines at 120 columns).
	"$$(bash hack/golangci-lint.sh | tail -1)" fmt

.PHONY: lint
lint: ## Run golangci-lint (built once into the cache).
	"$$(bash hack/golangci-lint.sh | tail -1)" run ./... && cd dev && "$$(bash ../hack/golangci-lint.sh | tail -1)" run ./...

.PHONY: test
test: ## What CI runs: the e2e on real lvm2 alone, then unit + envtest, fuzz, lvm2 in UML guests with csi-sanity among them, alert tests, verify (TEST_LANES=2: the e2e beside the rest). Installs what it needs; prints each phase's time.
	MAKE="$(MAKE)" bash hack/test.sh

.PHONY: test-more
test-more: ## What no longer fits make test's 90 min on two cores: the guest tests make test leaves out, the full e2e set, the storage conformance subset, then the upgrade test, each on a fresh dev cluster.
	TEST_LVM_SET=full-only $(MAKE) test-lvm
	$(MAKE) e2e-full
	$(MAKE) conformance-subset
	$(MAKE) upgrade

.PHONY: test-unit
test-unit: ## Unit tests and envtest suites with the race detector (self-built kube-apiserver + etcd, given 2 min to start on a busy machine), of the product's module and the dev tooling's (dev/).
	assets="$$(bash hack/kube-assets.sh | tail -1)"; \
	export KUBEBUILDER_CONTROLPLANE_START_TIMEOUT="$${KUBEBUILDER_CONTROLPLANE_START_TIMEOUT:-2m}"; \
	KUBEBUILDER_ASSETS="$$assets" CGO_ENABLED=1 go test -race $(GO_TEST_FLAGS) ./... && \
	KUBEBUILDER_ASSETS="$$assets" CGO_ENABLED=1 go -C dev test -race $(GO_TEST_FLAGS) ./...

.PHONY: fuzz
fuzz: ## Every fuzz target for FUZZTIME (default 30000x executions) on top of its committed corpus.
	bash hack/fuzz.sh

.PHONY: test-lvm
test-lvm: ## Host-layer tests against real lvm2 + device-mapper in User-mode Linux guests (the dev cluster is make e2e's).
	bash hack/test-lvm.sh

.PHONY: sanity
sanity: ## csi-sanity (built from the module proxy) against the real stack on real lvm2 in a UML guest.
	bash hack/sanity.sh

.PHONY: e2e
e2e: ## End-to-end suite's core set (make test's) on a fresh 2-node dev cluster (lvms-dev up), torn down after (E2E_RUN=regexp runs the tests it names, E2E_KEEP=1).
	$(MAKE) images
	bash hack/uml-deps.sh
	bash hack/e2e.sh

.PHONY: e2e-full
e2e-full: ## End-to-end suite's full set (the core set and the tests of docs/e2e.md's list; about 80 min on two cores) on a fresh dev cluster.
	$(MAKE) images
	bash hack/uml-deps.sh
	E2E_SET=full bash hack/e2e.sh

.PHONY: chaos
chaos: ## Chaos test on a fresh dev cluster: seeded SIGKILLs of operator, node agents, kube-apiserver and etcd while claims are provisioned, expanded, snapshotted, restored and deleted; prints the schedule and the invariant table (CHAOS_SEED=new, CHAOS_FAULTS=8, CHAOS_CLAIMS=8; make e2e runs it with a fixed seed, 4 and 4).
	$(MAKE) images
	bash hack/uml-deps.sh
	CHAOS_SEED="$${CHAOS_SEED:-$$(date +%s)}" CHAOS_FAULTS="$${CHAOS_FAULTS:-8}" CHAOS_CLAIMS="$${CHAOS_CLAIMS:-8}" \
		E2E_RUN='^TestChaos$$' E2E_PARALLEL="$${CHAOS_CLAIMS:-8}" E2E_TIMEOUT=60m bash hack/e2e.sh

.PHONY: upgrade
upgrade: ## Upgrade test: the release of dev/e2e/testdata/upgrade-from installed by helm and by kustomize, claims of every kind, upgraded in place to this tree on a fresh dev cluster (docs/upgrade.md).
	$(MAKE) images
	bash hack/uml-deps.sh
	bash hack/upgrade.sh

.PHONY: conformance
conformance: ## Kubernetes' storage e2e suite, every applicable spec, per device class on a fresh dev cluster; summary per suite and class, JUnit under _output/conformance (docs/conformance.md).
	$(MAKE) images
	bash hack/uml-deps.sh
	bash hack/conformance.sh

.PHONY: conformance-subset
conformance-subset: ## The curated subset of the storage e2e suite (test/conformance/subset.txt) that make test runs, about 10 min.
	$(MAKE) images
	bash hack/uml-deps.sh
	CONFORMANCE_SUBSET=1 bash hack/conformance.sh

.PHONY: bench-cluster
bench-cluster: ## Provisioning benchmark (thin and thick) on a fresh dev cluster, torn down after (CLAIMS=1 NODES=2; SCALE=0,100,1000 for the LVs-per-node run; PROFILE=N s of CPU profiles; docs/performance.md).
	$(MAKE) images
	bash hack/uml-deps.sh
	CLAIMS="$(or $(CLAIMS),1)" NODES="$(or $(NODES),2)" SCALE="$(SCALE)" PROFILE="$(or $(PROFILE),0)" bash dev/bench/cluster.sh

.PHONY: bench-peer
bench-peer: ## Provisioning benchmark of lvms, then of TopoLVM v0.41.0 (built from the Go module proxy), each on a fresh dev cluster of the same shape; both tables side by side, each against the floor measured the same way in its run (CLAIMS=1 NODES=2; docs/performance.md).
	$(MAKE) images
	bash hack/uml-deps.sh
	CLAIMS="$(or $(CLAIMS),1)" NODES="$(or $(NODES),2)" bash dev/bench/peer.sh

.PHONY: bench-scale
bench-scale: ## Control-plane scale benchmark: the real control plane, operator and csi-provisioner against kwok nodes with simulated node agents, grown to each of STEPS nodes (STEPS=100,1000,5000 CLAIMS=100; docs/performance.md).
	STEPS="$(or $(STEPS),100,1000,5000)" CLAIMS="$(or $(CLAIMS),100)" bash dev/bench/scale.sh

.PHONY: test-rules
test-rules: ## promtool check + unit tests of every alert (test/prometheus) on dist/prometheus-rules.yaml (promtool of Debian's prometheus package, unpacked into the cache).
	bash hack/test-rules.sh

.PHONY: bench
bench: ## Benchmarks (performance is measured here, never in timed unit tests): the host Go benchmarks, then the thin-metadata Delta/Allocated benchmark (bench-thinmeta) and the copy-between-nodes benchmark (bench-transfer) in UML guests.
	go test -run '^$$' -bench . -benchmem ./...
	go -C dev test -run '^$$' -bench . -benchmem ./...
	bash hack/bench-thinmeta.sh
	bash hack/bench-transfer.sh

.PHONY: bench-transfer
bench-transfer: ## Copy-between-nodes benchmark (TestGuestTransferBenchmark) in a UML guest: a 4 GiB thin volume 25 % allocated and a 4 GiB thick one through the Transfer service, against `dd | nc` and a kernel copy over the same loopback path (TRANSFER_BENCH_GIB=4; docs/mobility.md).
	bash hack/bench-transfer.sh

.PHONY: bench-thinmeta
bench-thinmeta: ## Thin-metadata Delta/Allocated benchmark (TestGuestBenchmark) in UML guests, chunk 64 KiB then 1 MiB (THINMETA_BENCH_GIB=10, THINMETA_BENCH_CHUNK_KIB="64 1024"; docs/changed-blocks.md).
	bash hack/bench-thinmeta.sh

.PHONY: tools
tools: ## Install and build every tool make test uses (apt packages, kube binaries, CSI tools, linter, helm, promtool); cached. The conformance suite (make test-more only) is built by make conformance itself.
	bash hack/uml-deps.sh
	bash hack/kube-assets.sh >/dev/null
	bash hack/csi-tools.sh >/dev/null
	bash hack/golangci-lint.sh >/dev/null
	bash hack/helm.sh >/dev/null
	bash hack/promtool.sh >/dev/null

.PHONY: kube-assets
kube-assets: ## Build the pinned kube-apiserver, etcd, kubectl, kube-scheduler, kube-controller-manager.
	bash hack/kube-assets.sh
