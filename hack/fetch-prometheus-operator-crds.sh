#!/usr/bin/env bash
# fetch-prometheus-operator-crds.sh - the Prometheus Operator's published CRDs (ServiceMonitor, PrometheusRule)
# from the Go module proxy, for the envtest check that the chart's monitoring objects pass the API server's
# validation. Prints the directory: bin/prometheus-operator-crds/<version>/. The module (about 10 MB) is
# fetched once into the Go module cache and checked against the pinned hash below; a cached copy returns at
# once.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
module=github.com/prometheus-operator/prometheus-operator
version=v0.85.0
sum=h1:M5xLCLEoaW2IJfnuCwFzzpL+jSVQu3KGT84Pye+fW8s=
crds=(monitoring.coreos.com_servicemonitors.yaml monitoring.coreos.com_prometheusrules.yaml)
out=${PROMETHEUS_OPERATOR_CRDS_DIR:-$root/bin/prometheus-operator-crds/$version}
if [[ -f $out/.stamp && $(cat "$out/.stamp") == "$sum" ]]; then
  echo "$out"
  exit 0
fi
echo "fetch-prometheus-operator-crds.sh: downloading $module@$version ..." >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Outside any module, so no go.mod is touched; go mod download verifies the zip against the checksum database.
info=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "$module@$version")
dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$info")
got=$(sed -n 's/^[[:space:]]*"Sum": "\(.*\)",$/\1/p' <<<"$info")
[[ $got == "$sum" ]] || { echo "fetch-prometheus-operator-crds.sh: $module@$version has hash $got, want $sum" >&2; exit 1; }
mkdir -p "$out"
for f in "${crds[@]}"; do
  cp "$dir/example/prometheus-operator-crd/$f" "$out/$f"
  chmod 0644 "$out/$f"
done
echo "$sum" >"$out/.stamp"
echo "$out"
