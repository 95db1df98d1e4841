# deltakeeper — build, generate, test. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

GO ?= go
CONTROLLER_GEN := $(GO) tool controller-gen
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/deltakeeper/deltakeeper/internal/version.Version=$(VERSION)

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN{FS=":.*##"} /^[a-zA-Z0-9_-]+:.*##/{printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Development
.PHONY: generate
generate: ## Generate deepcopy code, CRDs and RBAC from the API markers; chart copies of CRDs, alerts, dashboard.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd:allowDangerousTypes=true paths=./api/... output:crd:artifacts:config=config/crd/bases
	hack/crd-quantity-messages.sh
	$(CONTROLLER_GEN) rbac:roleName=deltakeeper-manager paths=./controllers/... output:rbac:artifacts:config=config/rbac
	hack/gen-chart-crds.sh
	hack/gen-monitoring.sh
	$(GO) run ./hack/gen-api-docs config/crd/bases docs/api.md

.PHONY: manifests
manifests: generate ## Alias of generate.

.PHONY: build
build: ## Build bin/deltakeeper (static).
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/deltakeeper ./cmd/deltakeeper

.PHONY: lint
lint: ## gofmt, go vet, golangci-lint (depguard architecture rules), go mod tidy, generated-files freshness.
	hack/lint.sh

##@ Test
.PHONY: test
test: ## Run every test: lint, unit, conformance, S3, envtest (real kube-apiserver), benchmark-module tests.
	hack/test.sh

.PHONY: torture
torture: ## The full torture suite: SIGKILLs, racing appenders, S3 faults (make test runs it at CI size).
	hack/torture.sh

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (default 60s), one after another (make test runs their seeds).
	hack/fuzz.sh

.PHONY: e2e
e2e: ## End-to-end tests on a real single-node cluster (root; host packages: hack/install-host-deps.sh).
	hack/e2e.sh

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver and etcd from the Go module proxy; print KUBEBUILDER_ASSETS.
	@hack/build-k8s.sh

##@ Demo
.PHONY: demo
demo: ## The main job: a real single-node cluster runs the operator, which compacts a small-file S3 table (root).
	hack/demo.sh

.PHONY: demo-cli
demo-cli: ## No cluster: a local table of small files, inspect, optimize, and scans that agree row for row.
	hack/demo-cli.sh
