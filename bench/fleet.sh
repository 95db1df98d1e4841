#!/usr/bin/env bash
# Fleet benchmark (bench/RESULTS.md, section "Fleet"): the manager against TABLES DeltaTables and POLICIES
# OptimizePolicies on the project's kube-apiserver + etcd + kube-controller-manager (Job controller), worker
# pods completed by the benchmark. Prints one JSON report: peak RSS, idle requests/s, restart-to-reconciled.
#
#   bench/fleet.sh [TABLES] [POLICIES] [EXTRA fleetbench FLAGS…]
#
# The record configuration is 10000 tables and 1000 policies; `bench/fleet.sh 1000 100` takes about two
# minutes. Needs bin/k8s (hack/build-k8s.sh all: kube-controller-manager too).
set -euo pipefail
cd "$(dirname "$0")/.."
TABLES=${1:-10000}
POLICIES=${2:-1000}
shift $(( $# < 2 ? $# : 2 ))
BIN=$(mktemp -d /tmp/fleetbench-bin-XXXXXX)
trap 'rm -rf "$BIN"' EXIT
go build -o "$BIN/deltakeeper" ./cmd/deltakeeper
(cd bench && go build -o "$BIN/fleetbench" ./cmd/fleetbench)
if [ -z "${KUBEBUILDER_ASSETS:-}" ]; then
  KUBEBUILDER_ASSETS=$(dirname "$(ls -d bin/k8s/*/kube-controller-manager | sort | tail -1)")
  export KUBEBUILDER_ASSETS
fi
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(uname -sr), $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN/fleetbench" -manager "$BIN/deltakeeper" -tables "$TABLES" -policies "$POLICIES" "$@"
echo "# done, load $(cut -d' ' -f1-3 /proc/loadavg)"
