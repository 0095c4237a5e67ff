# hypershift — hosted Kubernetes control planes.
#
#   make demo   start a management plane and a hosted cluster, show it working
#   make test   install what the tests need, build, and run every test

SHELL := /usr/bin/env bash -o pipefail
GO ?= go
BIN := $(CURDIR)/bin
TOOLS := $(BIN)/tools
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.1.0-dev)
KUBE_VERSION := v1.37.1
LDFLAGS := -X hypershift.dev/internal/version.Version=$(VERSION) \
	-X hypershift.dev/internal/version.KubernetesVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=37 \
	-X k8s.io/component-base/version.gitTreeState=clean
CONTROLLER_GEN_VERSION := v0.23.0
GOLANGCI_LINT_VERSION := v2.15.0
DEMO_DIR ?= $(CURDIR)/.demo

export HYPERSHIFT_BIN := $(BIN)/hypershift

# Kubernetes releases built beside the compiled-in one, each from its own
# module releases/v<minor> (docs/releases.md). Another minor is one more word
# here and a releases/v<minor> directory.
RELEASES := v1.36.3
release_minor = $(word 2,$(subst ., ,$(1)))
release_ldflags = -s -w -X k8s.io/component-base/version.gitVersion=$(1) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(call release_minor,$(1)) \
	-X k8s.io/component-base/version.gitTreeState=clean

.PHONY: all
all: build

.PHONY: build
# Static (no cgo), as upstream builds its components: the same binary runs on
# the host and, as hypershift's image, in the hosted clusters' pods, which
# have no C library.
build: releases clusterapi ## Build bin/hypershift (Kubernetes components compiled in), the releases and the Cluster API manager.
	CGO_ENABLED=0 $(GO) build -o $(BIN)/hypershift -ldflags "$(LDFLAGS)" ./cmd/hypershift

.PHONY: releases $(RELEASES)
releases: $(RELEASES) ## Build bin/releases/<version>/kubernetes for each of RELEASES.

# The binary (static, stripped: it is copied into the image) and its
# SHA256SUMS, which hypershift checks before running it.
$(RELEASES):
	cd releases/v1.$(call release_minor,$@) && CGO_ENABLED=0 $(GO) build \
		-o $(BIN)/releases/$@/kubernetes -ldflags "$(call release_ldflags,$@)" .
	cd $(BIN)/releases/$@ && sha256sum kubernetes > SHA256SUMS

# Cluster API's core controllers (docs/machines.md), built from their own
# module clusterapi/ (Cluster API requires other k8s.io versions than the
# root module), and the CRDs they install, copied from that module's
# sigs.k8s.io/cluster-api (none is checked in).
CLUSTERAPI_CRDS := clusters machines machinesets machinedeployments machinehealthchecks machinedrainrules
CAPA_MODULE := sigs.k8s.io/cluster-api-provider-aws/v2@v2.13.0
CAPA_CRDS := awsclusters awsmachines awsmachinetemplates awsclusterstaticidentities

.PHONY: clusterapi
clusterapi: ## Build bin/clusterapi/cluster-api-manager and copy its CRDs to bin/clusterapi/crds.
	cd clusterapi && CGO_ENABLED=0 $(GO) build -o $(BIN)/clusterapi/cluster-api-manager -ldflags "-s -w" .
	@mkdir -p $(BIN)/clusterapi/crds
	capi=$$(cd clusterapi && $(GO) list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api) && \
		for c in $(CLUSTERAPI_CRDS); do \
			install -m 0644 $$capi/core/config/crd/bases/cluster.x-k8s.io_$$c.yaml $(BIN)/clusterapi/crds/; \
		done
	@# The CRDs of cluster-api-provider-aws, for the platforms' contract
	@# tests (docs/platforms.md): from its module, which nothing builds.
	@mkdir -p $(BIN)/provider-crds/aws
	capa=$$(cd $(BIN) && $(GO) mod download -json $(CAPA_MODULE) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p') && test -n "$$capa" && \
		for c in $(CAPA_CRDS); do \
			install -m 0644 $$capa/config/crd/bases/infrastructure.cluster.x-k8s.io_$$c.yaml $(BIN)/provider-crds/aws/; \
		done

$(TOOLS)/controller-gen:
	GOBIN=$(TOOLS) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

$(TOOLS)/golangci-lint:
	GOBIN=$(TOOLS) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

.PHONY: generate
generate: $(TOOLS)/controller-gen ## Regenerate deepcopy code and CRDs.
	$(TOOLS)/controller-gen object paths=./api/...
	$(TOOLS)/controller-gen crd paths=./api/... output:crd:artifacts:config=config/crd/bases

.PHONY: lint
lint: $(TOOLS)/golangci-lint
	$(TOOLS)/golangci-lint run ./...

.PHONY: verify
verify: generate ## Regenerate and fail on any diff; vet; lint.
	@git diff --exit-code -- api config || { echo "generated files are stale: run 'make generate' and commit"; exit 1; }
	$(GO) vet ./...
	@# The release modules, as they are built (no cgo), so their compiled
	@# packages are reused from the build cache.
	$(foreach r,$(RELEASES),(cd releases/v1.$(call release_minor,$(r)) && CGO_ENABLED=0 $(GO) vet .) &&) true
	cd clusterapi && CGO_ENABLED=0 $(GO) vet .
	$(MAKE) lint

.PHONY: deps
deps: ## Install what the tests need from Debian's packages (when root).
	@./hack/install-deps.sh

$(BIN)/testreport: $(wildcard hack/testreport/*.go)
	$(GO) build -o $@ ./hack/testreport

# go test's -json stream goes through testreport, which prints what fails as
# it comes, keeps the stream (test.json) and ends with where the time went
# (report.txt: each package, the 25 slowest tests, the skips and why) and
# the line `N passed, N failed, N skipped`.
run_tests = $(GO) test -json -count=1 $(1) 2>&1 | $(BIN)/testreport \
	-json $(BIN)/test-artifacts/$(2).json -report $(BIN)/test-artifacts/$(2)-report.txt | tee $(BIN)/$(2).log

# The packages that have tests (make unit's; make test's are in
# hack/test.sh). go test given a package without tests still compiles it.
TEST_PACKAGES = $$($(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...)

# How many end-to-end tests run side by side at most (test/e2e/lanes_test.go):
# a test starts beside others only while the CPU pressure is low, a quiet
# test beside one other at most; 1 runs them one after another (docs/testing.md).
E2E_SLOTS ?= 3
export HYPERSHIFT_E2E_SLOTS := $(E2E_SLOTS)

.PHONY: test
# hack/test.sh builds the test binaries first, then runs the end-to-end
# tests (without -race) beside the other packages' (with -race, one at a
# time, at nice 10) and reads both streams into one report.
test: deps build $(BIN)/testreport ## Run every test: unit, controller (real API server), golden, e2e.
	CGO_ENABLED=0 $(GO) build ./...
	GO=$(GO) BIN=$(BIN) ./hack/test.sh
	@echo "test log: $(BIN)/test.log; time report: $(BIN)/test-artifacts/test-report.txt"

.PHONY: unit
# No management plane, no hypershift binary, no root: every package but the
# end-to-end tests, with -short (testenv skips what needs the binary).
unit: $(BIN)/testreport ## Quick feedback: the tests that need no binary, no management plane, no root.
	@mkdir -p $(BIN)/test-artifacts
	$(call run_tests,-short $$(echo $(TEST_PACKAGES) | tr ' ' '\n' | grep -v '^hypershift.dev/test/'),unit)

.PHONY: update-golden
update-golden: ## Regenerate golden files.
	$(GO) test ./internal/components ./internal/cli/... ./internal/nodes/join/... ./internal/dataplane/... ./internal/runtime/kube/... -update

.PHONY: demo
demo: deps build ## Management plane + one hosted cluster (as root: two real nodes running an app behind a Service).
	./hack/demo.sh "$(DEMO_DIR)"

.PHONY: bench
bench: build ## Measure create latency and footprint (see docs/performance.md).
	$(GO) run ./test/bench $(BENCH_ARGS)

.PHONY: clean
clean:
	-$(BIN)/hypershift --data-dir "$(DEMO_DIR)" destroy cluster --name demo --wait
	-for m in $$($(BIN)/hypershift machine --machines-dir "$(DEMO_DIR)-machines" list 2>/dev/null | awk 'NR>1 {print $$1}'); do \
		$(BIN)/hypershift machine --machines-dir "$(DEMO_DIR)-machines" delete $$m; done
	-$(BIN)/hypershift machine --machines-dir "$(DEMO_DIR)-machines" network --delete
	-cd "$(DEMO_DIR)-machines" 2>/dev/null && rm -f .hypershift-machines .lock && rmdir "$(DEMO_DIR)-machines"
	-$(BIN)/hypershift down --data-dir "$(DEMO_DIR)" --purge
	rm -rf $(BIN)
