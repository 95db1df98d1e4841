#!/usr/bin/env bash
# MERGE benchmark: `deltakeeper merge --mode upsert` (the CLI, as a Job runs it) upserting 1 % of the keys
# (9/10 existing, 1/10 new) into a table of 10M rows in 200 files and into one 4× larger, clustered on the
# key and with random keys, with deletion vectors and (clustered) copy-on-write, against DuckDB reading the
# files that really hold a matched key, anti-joining them with the batch and writing the result (same
# thread count, each its own process). Tables are built once by DuckDB + `deltakeeper ingest` and kept in
# WORK_DIR; every run merges into a fresh clone.
#
#   bench/merge.sh [WORK_DIR] [RUNS] [THREADS]
set -euo pipefail
cd "$(dirname "$0")"
WORK=${1:-/tmp/deltakeeper-mergework}
RUNS=${2:-3}
THREADS=${3:-2}
BIN="$WORK/bin"
mkdir -p "$BIN"
(cd .. && CGO_ENABLED=0 go build -trimpath -o "$BIN/deltakeeper" ./cmd/deltakeeper)
go build -o "$BIN/mergebench" ./cmd/mergebench
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(uname -sr), $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN/mergebench" run -work "$WORK" -bin "$BIN/deltakeeper" -rows 10000000 -files 200 -runs "$RUNS" -threads "$THREADS" -label 1x
"$BIN/mergebench" run -work "$WORK" -bin "$BIN/deltakeeper" -rows 40000000 -files 800 -runs "$RUNS" -threads "$THREADS" -label 4x -only clustered-dv,clustered-cow
# DuckDB takes ~17 s per random 4× run (it reads all 800 files): one run.
"$BIN/mergebench" run -work "$WORK" -bin "$BIN/deltakeeper" -rows 40000000 -files 800 -runs 1 -threads "$THREADS" -label 4x -only random-dv
