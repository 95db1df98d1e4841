#!/usr/bin/env bash
# fuzz.sh - `make fuzz`: run every fuzz target for FUZZTIME (default 60s), one after another.
# `go test` (and so `make test`) runs only their seed corpora; this searches beyond them. Inputs that
# fail are written under the package's testdata/fuzz/<Target>/: commit them, as regression seeds,
# with the fix.
#
#   FUZZTIME=2m hack/fuzz.sh            longer
#   FUZZ_TARGETS='FuzzWhere' hack/fuzz.sh   only some (a regexp on the target's name)
#
# The seeds come from the conformance tables: set DELTA_CONFORMANCE_DIR (see DEVELOPERS.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fuzztime=${FUZZTIME:-60s}
filter=${FUZZ_TARGETS:-.}
status=0
# Every Fuzz function of the main module, as "package target".
targets=$(grep -rl --include='*_test.go' '^func Fuzz' worker internal cmd controllers 2>/dev/null |
  xargs grep -h -H -o '^func Fuzz[A-Za-z0-9_]*' | sed 's#/[^/]*_test.go:func # #' | sort -u)
while read -r pkg target; do
  [[ -z $target ]] && continue
  [[ $target =~ $filter ]] || continue
  echo "fuzz.sh: ./$pkg $target for $fuzztime"
  corpus="$pkg/testdata/fuzz/$target"
  before=$(ls "$corpus" 2>/dev/null | wc -l)
  log=$(mktemp)
  # -run '^$' skips the package's other tests; the seeds of the target still run first.
  if go test "./$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" 2>&1 | tee "$log"; [[ ${PIPESTATUS[0]} -eq 0 ]]; then
    :
  elif [[ $(ls "$corpus" 2>/dev/null | wc -l) -eq $before ]] && grep -q '^    context deadline exceeded$' "$log" &&
    ! grep -q -- '--- FAIL: .*/' "$log"; then
    # Go's fuzz coordinator can report its own -fuzztime deadline as a failure when the machine is
    # loaded (golang/go#75804, fixed in Go 1.27): no input was written, nothing to reproduce.
    echo "fuzz.sh: $target stopped with Go's fuzztime deadline race (golang/go#75804), no failing input: not a finding" >&2
  else
    echo "fuzz.sh: $target FAILED; the failing input is under $corpus/" >&2
    status=1
  fi
  rm -f "$log"
done <<<"$targets"
exit "$status"
