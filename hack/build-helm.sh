#!/usr/bin/env bash
# build-helm.sh - build the Helm CLI from the Go module proxy (hack/helm pins the version) into
# bin/helm/<version>/helm and print its path. Rebuilt only when hack/helm/go.sum changes; about two minutes
# cold on 2 cores, immediate when cached. The tests use it to lint and render charts/deltakeeper.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(grep -oE 'helm.sh/helm/v4 v[0-9][^ ]*' "$root/hack/helm/go.mod" | head -n1 | cut -d' ' -f2)
out=$root/bin/helm/$version
stamp=$(sha256sum "$root/hack/helm/go.sum" | cut -c1-16)
if [[ -x $out/helm && -f $out/.stamp && $(cat "$out/.stamp") == "$stamp" ]]; then
  echo "$out/helm"
  exit 0
fi
mkdir -p "$out"
echo "build-helm.sh: building helm $version ..." >&2
start=$(date +%s)
(cd "$root/hack/helm" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "-s -w" -o "$out/helm.tmp" helm.sh/helm/v4/cmd/helm)
mv "$out/helm.tmp" "$out/helm"
echo "$stamp" >"$out/.stamp"
echo "build-helm.sh: built helm in $(( $(date +%s) - start ))s" >&2
echo "$out/helm"
