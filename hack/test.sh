#!/usr/bin/env bash
# test.sh - everything `make test` runs, building what the tests need first (nothing comes pre-installed):
#   kube-apiserver + etcd + kubectl from the Go module proxy (envtest), the S3-compatible test server, the
#   Azure (Azurite, from npm) and GCS (fake-gcs-server) emulators, the Helm CLI (the chart is linted, rendered and dry-run applied), then
#   the Prometheus Operator CRDs (envtest dry-runs the chart's ServiceMonitor and PrometheusRule), then
#   lint, every Go test of the main module (unit, conformance, S3 integration, envtest), the concurrent
#   packages again under the race detector, and the benchmark module's cross-checks against DuckDB.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
t0=$(date +%s)
step() { printf '\n== %s (%ss)\n' "$*" "$(( $(date +%s) - t0 ))"; }

step "build test dependencies"
KUBEBUILDER_ASSETS=$(hack/build-k8s.sh)
export KUBEBUILDER_ASSETS
DELTAKEEPER_S3SERVER=$(hack/build-s3server.sh)
export DELTAKEEPER_S3SERVER
DELTAKEEPER_AZURITE=$(hack/build-azurite.sh)
export DELTAKEEPER_AZURITE
DELTAKEEPER_GCSSERVER=$(hack/build-gcsserver.sh)
export DELTAKEEPER_GCSSERVER
DELTAKEEPER_HELM=$(hack/build-helm.sh)
export DELTAKEEPER_HELM
DELTAKEEPER_PROMETHEUS_OPERATOR_CRDS=$(hack/fetch-prometheus-operator-crds.sh)
export DELTAKEEPER_PROMETHEUS_OPERATOR_CRDS
# test/torture at its CI size (make torture runs the full counts).
export DELTAKEEPER_TORTURE=ci
export DELTA_CONFORMANCE_DIR=${DELTA_CONFORMANCE_DIR:-$(cd "$root/.." && pwd)/shared/delta-conformance}

step "lint"
hack/lint.sh

step "go test ./... (main module)"
go test -count=1 -timeout 30m ./...

# The packages that run their own goroutines over shared state (parallel checkpoint decoding and the
# commit read-ahead, the rewrite and permute engines and the parallel column encoder, the S3 reader's
# cache, the merge's write beside its match and its parallel reads, FULL clustering's parallel sort
# and background output closes, the reconcilers) again under the race detector: a race there can
# lose or duplicate rows, and it rarely shows otherwise.
step "go test -race (concurrent packages)"
go test -race -count=1 -timeout 30m ./worker/delta ./worker/parquetio ./worker/storage ./worker/merge ./worker/cluster ./controllers

# The dashboard in Grafana's schema and the alerts through promtool (Debian's prometheus package:
# hack/install-host-deps.sh); its own module keeps the Grafana SDK out of the main go.mod.
step "go test ./... (test/monitoring module: dashboard schema, promtool)"
(cd test/monitoring && go test -count=1 ./...)

if [[ -f bench/go.mod ]]; then
  step "go test ./... (bench module: DuckDB cross-checks)"
  (cd bench && go test -count=1 -timeout 20m ./...)
fi
step "all tests passed"
