#!/usr/bin/env bash
# gen-monitoring.sh - one source for the alerts and the dashboard: config/monitoring/deltakeeper.rules.yaml and
# config/monitoring/dashboard.json. This wraps the rules in the PrometheusRule of config/monitoring and copies
# both into the Helm chart's files/, which the chart's PrometheusRule and dashboard ConfigMap read. `make
# generate` runs it; hack/lint.sh fails when a copy is stale.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$root/config/monitoring
mkdir -p "$root/charts/deltakeeper/files"
cp "$src/deltakeeper.rules.yaml" "$src/dashboard.json" "$root/charts/deltakeeper/files/"
{
  echo "# Generated from deltakeeper.rules.yaml by hack/gen-monitoring.sh; do not edit."
  echo "apiVersion: monitoring.coreos.com/v1"
  echo "kind: PrometheusRule"
  echo "metadata:"
  echo "  name: deltakeeper"
  echo "  namespace: deltakeeper-system"
  echo "  labels:"
  echo "    app.kubernetes.io/name: deltakeeper"
  echo "spec:"
  grep -v '^#' "$src/deltakeeper.rules.yaml" | sed 's/^/  /'
} >"$src/prometheusrule.yaml"
