#!/usr/bin/env bash
# Ingest benchmark: `deltakeeper ingest --available-now` (the CLI, as a Job runs it) vs DuckDB COPY … TO
# parquet over the same NDJSON, CSV and Parquet files, same thread count, each run in its own process,
# at 1× (2M rows) and 4× input; DuckDB checks every table against the Parquet source. Then the
# optimized-write layout of a batch over 20 partitions, the text readers against arrow-go's, and the
# state of a million taken files.
# Sources are cmd/gen's event files, converted to CSV and NDJSON by DuckDB (generated on first use).
#
#   bench/ingest.sh [DATA_DIR] [RUNS] [THREADS] [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")"
DATA=${1:-/tmp/deltakeeper-ingestbench}
RUNS=${2:-3}
THREADS=${3:-2}
WORK=${4:-/tmp/deltakeeper-ingestwork}
BIN="$WORK/bin"
mkdir -p "$BIN"
(cd .. && CGO_ENABLED=0 go build -trimpath -o "$BIN/deltakeeper" ./cmd/deltakeeper)
go build -o "$BIN/ingestbench" ./cmd/ingestbench
go build -o "$BIN/gen" ./cmd/gen
go build -o "$BIN/readerbench" ./cmd/readerbench
[ -d "$DATA/src1x" ] || { "$BIN/gen" -out "$DATA/gen1x" -files 40 -rows 50000 -seed 1 && "$BIN/ingestbench" sources -in "$DATA/gen1x" -out "$DATA/src1x"; }
[ -d "$DATA/src4x" ] || { "$BIN/gen" -out "$DATA/gen4x" -files 160 -rows 50000 -seed 4 && "$BIN/ingestbench" sources -in "$DATA/gen4x" -out "$DATA/src4x"; }
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(uname -sr), $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"
for scale in 1x 4x; do
  "$BIN/ingestbench" run -src "$DATA/src$scale" -work "$WORK" -bin "$BIN/deltakeeper" -threads "$THREADS" -runs "$RUNS" -label "$scale"
done
"$BIN/ingestbench" layout -src "$DATA/src1x" -work "$WORK" -bin "$BIN/deltakeeper" -threads "$THREADS"
"$BIN/readerbench" -src "$DATA/src1x" -files 10
"$BIN/ingestbench" state -work "$WORK" -files 1000000
