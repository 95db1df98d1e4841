#!/usr/bin/env bash
# Liquid clustering benchmark (bench/RESULTS.md, section "Liquid clustering"):
#   1. FULL clustering of a generated table clustered by two uniform columns (k1 long, k2 timestamp)
#      next to DuckDB ORDER BY k1, k2 of the same files, same threads, each in its own process;
#   2./3. append 1% new rows in 20 small files and run incremental optimize, CYCLES times, comparing
#      the quality with FULL's planned layout every cycle (cluster.PlanFull, -dry-ref: the key columns
#      are read, nothing written) and with a real FULL on a hard-linked copy every FULL_EVERY cycles.
#
#   bench/clustering.sh [DATA_DIR] [ROWS] [TARGET_BYTES] [CYCLES] [THREADS] [FULL_EVERY] [EXTRA_INCR_FLAGS…]
#
# The record configuration is 26,000,000 rows (2.16 GB of uncompressed column data, 1.13 GB of zstd
# files) with a 14 MiB target (≈75 files); the quick configuration for repeated use is 400,000 rows
# with a 320 KiB target. FULL runs with FULL_MEMORY_LIMIT (default 4 GiB, about DuckDB's peak on the
# record table, where the columnar sort takes one pass); the incremental cycles with 10 GiB.
set -euo pipefail
cd "$(dirname "$0")"
DATA=${1:-/tmp/deltakeeper-clusterbench}
ROWS=${2:-400000}
TARGET=${3:-327680}
CYCLES=${4:-20}
THREADS=${5:-2}
FULL_EVERY=${6:-2}
shift $(( $# < 6 ? $# : 6 ))
BIN="$DATA/bin"
mkdir -p "$BIN"
go build -o "$BIN/clusterbench" ./cmd/clusterbench
T="$DATA/t-$ROWS"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(uname -sr), $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ ! -d "$T/gen" ]; then
  "$BIN/clusterbench" gen -table "$T/gen" -rows "$ROWS" -file-size $((TARGET * 3))
fi
run() { /usr/bin/time -f '{"step":"time","wall":%e,"user":%U,"sys":%S,"maxrssKiB":%M}' "$@"; }
RUNS=${RUNS:-3}
FULL_MEMORY_LIMIT=${FULL_MEMORY_LIMIT:-$((4 << 30))}
for run_i in $(seq "$RUNS"); do
  rm -rf "$T/full" "$T/duck"
  cp -r "$T/gen" "$T/full"
  echo "# run $run_i, load $(cut -d' ' -f1-3 /proc/loadavg)"
  run "$BIN/clusterbench" duck -table "$T/gen" -out "$T/duck" -threads "$THREADS" -target "$TARGET"
  run "$BIN/clusterbench" full -table "$T/full" -threads "$THREADS" -target "$TARGET" -memory-limit "$FULL_MEMORY_LIMIT"
done
rm -rf "$T/duck"
echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN/clusterbench" incr -table "$T/full" -work "$T" -cycles "$CYCLES" -pct 1 -files 20 -full-every "$FULL_EVERY" \
  -threads "$THREADS" -target "$TARGET" -memory-limit $((10 << 30)) "$@"
echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
