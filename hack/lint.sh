#!/usr/bin/env bash
# lint.sh - formatting, go vet, golangci-lint (with depguard's architecture rules), go mod tidy, and freshness
# of generated files (deepcopy, CRDs, RBAC, chart CRDs). `make lint` and `make test` run it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '^hack/k8s/') 2>/dev/null || true)
if [[ -n $unformatted ]]; then
  echo "lint: not gofmt-formatted (run gofmt -w):" >&2
  echo "$unformatted" >&2
  exit 1
fi

# The separate modules: bench keeps DuckDB out of the main module, hack/s3server the test S3 server's
# dependencies, test/monitoring the Grafana SDK of the dashboard check, hack/tools golangci-lint's; hack/k8s and
# hack/helm only pin upstream builds.
modules=(. bench hack/s3server test/monitoring)

for mod in "${modules[@]}"; do
  (cd "$mod" && go vet ./...)
done

# golangci-lint v2 (.golangci.yml), built as a go tool from hack/tools/go.mod: its build is cached in Go's
# build cache, its analysis under bin/ (CI keeps bin/ between warm runs).
export GOLANGCI_LINT_CACHE=${GOLANGCI_LINT_CACHE:-$root/bin/golangci-lint-cache}
golangci_lint=(go tool -modfile="$root/hack/tools/go.mod" golangci-lint)
# bench is not linted yet: its benchmark commands have 39 findings (unchecked fs.Parse, exits after defers).
for mod in . hack/s3server test/monitoring; do
  (cd "$mod" && "${golangci_lint[@]}" run --config "$root/.golangci.yml" ./...)
done

# go.mod and go.sum say what the code imports: direct dependencies not marked indirect, nothing missing or
# left over.
untidy=0
for mod in . bench hack/s3server test/monitoring hack/tools hack/k8s hack/helm; do
  if ! diff=$(cd "$mod" && go mod tidy -diff 2>&1); then
    echo "lint: $mod/go.mod is not tidy (run: cd $mod && go mod tidy):" >&2
    echo "$diff" >&2
    untidy=1
  fi
done
[[ $untidy == 0 ]] || exit 1

# Regenerate and compare: a stale generated file means someone changed a marker without `make generate`.
generated=(api/v1/zz_generated.deepcopy.go config/crd/bases config/rbac/role.yaml charts/deltakeeper/templates/crds charts/deltakeeper/templates/_manager_rules.tpl charts/deltakeeper/templates/userroles.yaml charts/deltakeeper/files config/monitoring/prometheusrule.yaml docs/api.md)
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
