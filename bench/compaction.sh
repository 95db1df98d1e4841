#!/usr/bin/env bash
# Compaction benchmark: our Rewrite vs DuckDB COPY … zstd, same input, same thread count, each run in
# its own process (wall, CPU, peak RSS per tool), at 1× and 4× input; outputs verified with DuckDB.
#
#   bench/compaction.sh [DATA_DIR] [RUNS] [THREADS]
#
# OURS_CMD overrides our side (a template with {in} {out} {threads}), e.g. to benchmark
# "deltakeeper optimize" once it exists. Inputs are generated on first use (about 40 s).
set -euo pipefail
cd "$(dirname "$0")"
DATA=${1:-/tmp/deltakeeper-bench}
RUNS=${2:-5}
THREADS=${3:-2}
BIN="$DATA/bin"
mkdir -p "$BIN"
go build -o "$BIN/gen" ./cmd/gen
go build -o "$BIN/rewrite" ./cmd/rewrite
go build -o "$BIN/duckcopy" ./cmd/duckcopy
go build -o "$BIN/benchcompact" ./cmd/benchcompact
[ -d "$DATA/in1x" ] || "$BIN/gen" -out "$DATA/in1x" -files 40 -rows 50000 -seed 1
[ -d "$DATA/in4x" ] || "$BIN/gen" -out "$DATA/in4x" -files 160 -rows 50000 -seed 4
OURS=${OURS_CMD:-"$BIN/rewrite -in {in} -out {out} -threads {threads}"}
DUCK="$BIN/duckcopy -in {in} -out {out} -threads {threads}"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(uname -sr), $(go version | cut -d' ' -f3)"
for scale in 1x 4x; do
  "$BIN/benchcompact" -in "$DATA/in$scale" -work "$DATA" -threads "$THREADS" -runs "$RUNS" -label "$scale" \
    -ours "$OURS" -duckdb "$DUCK"
done
