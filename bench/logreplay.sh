#!/usr/bin/env bash
# logreplay.sh - the log-replay benchmark: a table with 1,000,000 live files (a classic checkpoint plus
# 100 JSON commits, written by deltakeeper's own transactions, no data files), loaded by deltakeeper's
# snapshot loader and by DuckDB (read_parquet on the checkpoint + read_json_auto on the commits), each
# in its own process, wall time and peak RSS from getrusage. Not part of `make test`.
#   bench/logreplay.sh [DIR] [FILES] [RUNS]
set -euo pipefail
cd "$(dirname "$0")"
dir=${1:-$(mktemp -d)/replay}
files=${2:-1000000}
runs=${3:-3}
go build -o "$dir.bin" ./cmd/replaybench
if [[ ! -d $dir/_delta_log ]]; then
  echo "generating $files live files in $dir" >&2
  /usr/bin/time -f "generated in %e s, peak RSS %M KiB" "$dir.bin" gen -dir "$dir" -files "$files" -commits 100
fi
du -sh "$dir/_delta_log" >&2
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$dir.bin" run -dir "$dir" -runs "$runs"
