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
# Test packages run in parallel; each starts its own API servers.
TEST_PARALLEL ?= 2
DEMO_DIR ?= $(CURDIR)/.demo

export HYPERSHIFT_BIN := $(BIN)/hypershift

.PHONY: all
all: build

.PHONY: build
# Static (no cgo), as upstream builds its components: the same binary runs on
# the host and, as hypershift's image, in the hosted clusters' pods, which
# have no C library.
build: ## Build bin/hypershift (Kubernetes components compiled in).
	CGO_ENABLED=0 $(GO) build -o $(BIN)/hypershift -ldflags "$(LDFLAGS)" ./cmd/hypershift

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
	$(MAKE) lint

.PHONY: deps
deps: ## Install what the tests need from Debian's packages (when root).
	@./hack/install-deps.sh

.PHONY: test
test: deps build ## Run every test: unit, controller (real API server), golden, e2e.
	$(GO) test -race -count=1 -p $(TEST_PARALLEL) -timeout 40m ./... 2>&1 | tee $(BIN)/test.log
	@echo "test log: $(BIN)/test.log"

.PHONY: update-golden
update-golden: ## Regenerate golden files.
	$(GO) test ./internal/components/... ./internal/cli/... ./internal/nodes/join/... ./internal/dataplane/... ./internal/runtime/kube/... -update

.PHONY: demo
demo: deps build ## Management plane + one hosted cluster, used with kubectl.
	./hack/demo.sh "$(DEMO_DIR)"

.PHONY: bench
bench: build ## Measure create latency and footprint (see docs/performance.md).
	$(GO) run ./test/bench $(BENCH_ARGS)

.PHONY: clean
clean:
	-$(BIN)/hypershift down --data-dir "$(DEMO_DIR)" --purge
	rm -rf $(BIN)
