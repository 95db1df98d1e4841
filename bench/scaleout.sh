#!/usr/bin/env bash
# Scale-out benchmark: one compaction spread over 1, 2 and 3 shares (`deltakeeper optimize --share i/N`), each
# share its own process pinned to one core's worth of Go (GOMAXPROCS=1, --parallelism 1) — the stand-in for
# pods at a fixed CPU limit on this 2-core machine. Wall time is from the start of the shares to the exit of
# share 0, which waits for the others and commits; CPU is the sum of every share's user+sys (rusage). Every
# run starts from a fresh copy of the same table; the rows are checked after each run.
#
#   bench/scaleout.sh [WORK_DIR] [RUNS] [FILES] [ROWS_PER_FILE]
set -euo pipefail
cd "$(dirname "$0")"
WORK=${1:-/tmp/deltakeeper-scaleout}
RUNS=${2:-3}
FILES=${3:-96}
ROWS=${4:-40000}
BIN="$WORK/bin"
mkdir -p "$BIN"
(cd .. && CGO_ENABLED=0 go build -trimpath -o "$BIN/deltakeeper" ./cmd/deltakeeper)
DK="$BIN/deltakeeper"
SRC="$WORK/source"
if [ ! -d "$SRC/_delta_log" ]; then
  "$DK" demo-data "$SRC" --files "$FILES" --rows-per-file "$ROWS" --partitioned >/dev/null
fi
count() { "$DK" scan "$1" --format jsonl 2>/dev/null | wc -l; }
want=$(count "$SRC")
version=$("$DK" inspect "$SRC" -o json | sed -E 's/.*"version":([0-9]+).*/\1/')
size=$(du -sb --exclude=_delta_log "$SRC" | cut -f1)
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); table: $FILES files, $want rows, $size bytes, version $version"
echo "shares run wall_s cpu_s max_share_cpu_s rows_ok commits"
for n in 1 2 3; do
  for r in $(seq 1 "$RUNS"); do
    t="$WORK/t-$n-$r"
    rm -rf "$t"
    cp -al "$SRC" "$t"
    rm -rf "$t/_delta_log" && cp -r "$SRC/_delta_log" "$t/_delta_log"
    start=$(date +%s.%N)
    pids=()
    for i in $(seq 0 $((n - 1))); do
      GOMAXPROCS=1 /usr/bin/time -f "%U %S" -o "$WORK/time-$i" "$DK" optimize "$t" --share "$i/$n" --run-id "bench-$n-$r" \
        --at-version "$version" --parallelism 1 --target-file-size 16m -o json >"$WORK/out-$i" 2>/dev/null &
      pids+=($!)
    done
    wait "${pids[0]}"
    end=$(date +%s.%N)
    for p in "${pids[@]:1}"; do wait "$p"; done
    cpu=0 maxcpu=0
    for i in $(seq 0 $((n - 1))); do
      c=$(awk '{print $1 + $2}' "$WORK/time-$i")
      cpu=$(echo "$cpu + $c" | bc)
      maxcpu=$(echo "if ($c > $maxcpu) $c else $maxcpu" | bc)
    done
    got=$want
    [ "$r" = 1 ] && got=$(count "$t")   # a full scan per share count: the commit checks rows itself every time
    commits=$(( $(ls "$t/_delta_log"/*.json | wc -l) - $(ls "$SRC/_delta_log"/*.json | wc -l) ))
    ok=no; [ "$got" = "$want" ] && ok=yes
    printf "%d %d %.2f %.2f %.2f %s %d\n" "$n" "$r" "$(echo "$end - $start" | bc)" "$cpu" "$maxcpu" "$ok" "$commits"
    rm -rf "$t"
  done
done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
