#!/usr/bin/env bash
# Optimize benchmark: `deltakeeper optimize` (the CLI, as a Job runs it) vs DuckDB COPY … zstd over the
# same Delta table's live files, same thread count, each run in its own process, at 1× and 4× input;
# the compacted table is checked with DuckDB. Inputs are cmd/gen's Spark-like files (generated on first
# use, shared with compaction.sh when DATA_DIR is the same).
#
#   bench/optimize.sh [DATA_DIR] [RUNS] [THREADS] [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")"
DATA=${1:-/tmp/deltakeeper-bench}
RUNS=${2:-3}
THREADS=${3:-2}
WORK=${4:-/tmp/deltakeeper-optbench}
BIN="$WORK/bin"
mkdir -p "$BIN"
(cd .. && CGO_ENABLED=0 go build -trimpath -o "$BIN/deltakeeper" ./cmd/deltakeeper)
go build -o "$BIN/optimizebench" ./cmd/optimizebench
[ -d "$DATA/in1x" ] || { go build -o "$BIN/gen" ./cmd/gen && "$BIN/gen" -out "$DATA/in1x" -files 40 -rows 50000 -seed 1; }
[ -d "$DATA/in4x" ] || { go build -o "$BIN/gen" ./cmd/gen && "$BIN/gen" -out "$DATA/in4x" -files 160 -rows 50000 -seed 4; }
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(uname -sr), $(go version | cut -d' ' -f3)"
for scale in 1x 4x; do
  "$BIN/optimizebench" run -in "$DATA/in$scale" -work "$WORK" -bin "$BIN/deltakeeper" -threads "$THREADS" -runs "$RUNS" -label "$scale"
done
