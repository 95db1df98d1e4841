#!/usr/bin/env bash
# demo-cli.sh - the no-cluster demo: a local Delta table made of many small files, compacted by
# `deltakeeper optimize`, with proof that the table reads the same, row for row, before and after.
#
#   hack/demo-cli.sh            (or: make demo-cli)
#
# DEMO_DIR keeps the table somewhere (default: a new temp directory); DEMO_FILES and DEMO_ROWS size
# it (default 100 files of 5,000 rows, partitioned by order_date).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
work=${DEMO_DIR:-$(mktemp -d -t deltakeeper-demo.XXXXXX)}
files=${DEMO_FILES:-100}
rows=${DEMO_ROWS:-5000}
mkdir -p "$work"
table="$work/orders"
if [ -e "$table" ]; then
  echo "demo-cli: $table already exists; remove it or set DEMO_DIR to another directory" >&2
  exit 1
fi

echo "Building deltakeeper…"
bin="$work/deltakeeper"
go build -o "$bin" ./cmd/deltakeeper

run() {
  echo
  echo "\$ deltakeeper $*"
  "$bin" "$@"
}

# scan_sorted writes the table's rows (one JSON object per line) sorted, so that two scans compare as
# multisets whatever the file order; it prints nothing else.
scan_sorted() {
  "$bin" scan "$table" "$@" --out "$work/scan.jsonl" >/dev/null 2>&1
  LC_ALL=C sort "$work/scan.jsonl"
  rm -f "$work/scan.jsonl"
}

run demo-data "$table" --files "$files" --rows-per-file "$rows" --partitioned
run inspect "$table"
before_version=$("$bin" inspect "$table" -o json | sed -n 's/.*"version":\([0-9]*\).*/\1/p')
scan_sorted >"$work/before.jsonl"

run optimize "$table"
run inspect "$table"
scan_sorted >"$work/after.jsonl"
scan_sorted --version "$before_version" >"$work/time-travel.jsonl"

echo
echo "Row-for-row check (scans sorted and compared):"
count() { wc -l <"$1" | tr -d ' '; }
sum() { sha256sum "$1" | cut -c1-16; }
printf '  before optimize    %9s rows  sha256 %s\n' "$(count "$work/before.jsonl")" "$(sum "$work/before.jsonl")"
printf '  after optimize     %9s rows  sha256 %s\n' "$(count "$work/after.jsonl")" "$(sum "$work/after.jsonl")"
printf '  version %-10s %9s rows  sha256 %s  (time travel to before the compaction)\n' "$before_version" \
  "$(count "$work/time-travel.jsonl")" "$(sum "$work/time-travel.jsonl")"
if cmp -s "$work/before.jsonl" "$work/after.jsonl" && cmp -s "$work/before.jsonl" "$work/time-travel.jsonl"; then
  echo "  identical: the compaction changed the files, not the rows."
else
  echo "  MISMATCH: the scans differ (diff $work/before.jsonl $work/after.jsonl)" >&2
  exit 1
fi
rm -f "$work/before.jsonl" "$work/after.jsonl" "$work/time-travel.jsonl"
echo
echo "The table is in $table; try: $bin vacuum $table --dry-run"
