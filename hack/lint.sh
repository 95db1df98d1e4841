#!/usr/bin/env bash
# lint.sh - formatting, go vet, and freshness of generated files (deepcopy, CRDs, RBAC, chart CRDs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '^hack/k8s/') 2>/dev/null || true)
if [[ -n $unformatted ]]; then
  echo "lint: not gofmt-formatted (run gofmt -w):" >&2
  echo "$unformatted" >&2
  exit 1
fi

go vet ./...
for mod in bench hack/s3server; do
  if [[ -f $mod/go.mod ]]; then (cd "$mod" && go vet ./...); fi
done

# Regenerate and compare: a stale generated file means someone changed a marker without `make generate`.
generated=(api/v1/zz_generated.deepcopy.go config/crd/bases config/rbac/role.yaml charts/deltakeeper/templates/crds charts/deltakeeper/templates/clusterrole.yaml docs/api.md)
snapshot=$(mktemp -d)
trap 'rm -rf "$snapshot"' EXIT
for p in "${generated[@]}"; do
  [[ -e $p ]] && mkdir -p "$snapshot/$(dirname "$p")" && cp -r "$p" "$snapshot/$p"
done
make --no-print-directory generate >/dev/null
stale=0
for p in "${generated[@]}"; do
  if ! diff -r "$snapshot/$p" "$p" >/dev/null 2>&1; then
    echo "lint: $p was stale; 'make generate' has now updated it: review and commit the result" >&2
    stale=1
  fi
done
exit $stale
