#!/usr/bin/env bash
# Scale-out vacuum benchmark: one full-mode VACUUM of ORPHANS unreferenced files on the S3 test server
# (rclone serve s3), spread over 1, 2 and 3 shares (`deltakeeper vacuum --share i/N --at-version V`, the part
# of the table each index of a scale-out run vacuums), each share its own process with GOMAXPROCS=1 — the
# stand-in for pods at a fixed CPU limit on this 2-core machine. Wall is from the start of the shares to the
# exit of the last; CPU is the sum of every share's user+sys (rusage), "critical" the largest one's, and the
# server's CPU is reported apart (/proc). Every run starts from a fresh copy of the bucket and a fresh server;
# after each run the bucket must hold exactly the live files and the log, and the shares' deletes must add
# up to ORPHANS.
#
#   DELTAKEEPER_S3SERVER=… bench/vacuumshares.sh [WORK_DIR] [RUNS] [ORPHANS] [FILES]
#
# FILES demo files make FILES/4 date partitions: rclone's cost per delete grows with the directory's size,
# so the default 960 (240 partitions, about 200 orphans each) keeps the server from dominating.
set -euo pipefail
cd "$(dirname "$0")"
WORK=${1:-/tmp/deltakeeper-vacuumshares}
RUNS=${2:-3}
ORPHANS=${3:-50000}
FILES=${4:-960}
S3SERVER=${DELTAKEEPER_S3SERVER:?export DELTAKEEPER_S3SERVER (hack/build-s3server.sh prints the path)}
BIN="$WORK/bin"
mkdir -p "$BIN"
(cd .. && CGO_ENABLED=0 go build -trimpath -o "$BIN/deltakeeper" ./cmd/deltakeeper)
DK="$BIN/deltakeeper"
SRC="$WORK/source"
if [ ! -d "$SRC/_delta_log" ]; then
  "$DK" demo-data "$SRC" --files "$FILES" --rows-per-file 100 --partitioned >/dev/null
fi
version=$("$DK" inspect "$SRC" -o json | sed -E 's/.*"version":([0-9]+).*/\1/')
mapfile -t dirs < <(cd "$SRC" && ls -d order_date=*)
live=$(find "$SRC" -path "$SRC/_delta_log" -prune -o -type f -name '*.parquet' -print | wc -l)
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=benchsecret AWS_REGION=us-east-1 DELTAKEEPER_S3_PATH_STYLE=true
DATA="$WORK/s3"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); table: $live live files in ${#dirs[@]} partitions, version $version; $ORPHANS orphans"
echo "shares run wall_s cpu_s max_share_cpu_s server_cpu_s deleted listed_dirs ok"
for n in 1 2 3; do
  for r in $(seq 1 "$RUNS"); do
    rm -rf "$DATA"
    mkdir -p "$DATA/bench"
    cp -r "$SRC" "$DATA/bench/t"
    # The orphans: spread over the partitions and the root, as failed writes leave them.
    for ((i = 0; i < ORPHANS; i++)); do
      d=$((i % (${#dirs[@]} + 1)))
      if ((d == ${#dirs[@]})); then : >"$DATA/bench/t/orphan-$i.parquet"; else : >"$DATA/bench/t/${dirs[$d]}/orphan-$i.parquet"; fi
    done
    "$S3SERVER" serve s3 --config "" --addr 127.0.0.1:0 --auth-key "$AWS_ACCESS_KEY_ID,$AWS_SECRET_ACCESS_KEY" --log-level NOTICE "$DATA" \
      2>"$WORK/server.log" &
    server=$!
    endpoint=""
    for _ in $(seq 1 100); do
      endpoint=$(sed -n 's|.*Starting s3 server on \[\(http://[^]/ ]*\)/*\].*|\1|p' "$WORK/server.log" | head -n1)
      [ -n "$endpoint" ] && break
      sleep 0.1
    done
    export AWS_ENDPOINT_URL_S3=$endpoint
    start=$(date +%s.%N)
    pids=()
    for i in $(seq 0 $((n - 1))); do
      share=()
      ((n > 1)) && share=(--share "$i/$n" --at-version "$version")
      GOMAXPROCS=1 /usr/bin/time -f "%U %S" -o "$WORK/time-$i" "$DK" vacuum s3://bench/t --retention 0s --allow-short-retention \
        "${share[@]}" -o json >"$WORK/out-$i" 2>/dev/null &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    end=$(date +%s.%N)
    read -r su ss < <(awk '{print $14, $15}' "/proc/$server/stat")
    kill "$server"
    wait "$server" 2>/dev/null || true
    cpu=0 maxcpu=0 deleted=0 ldirs=0
    for i in $(seq 0 $((n - 1))); do
      c=$(awk '{print $1 + $2}' "$WORK/time-$i")
      cpu=$(echo "$cpu + $c" | bc)
      maxcpu=$(echo "if ($c > $maxcpu) $c else $maxcpu" | bc)
      deleted=$((deleted + $(sed -E 's/.*"filesRemoved":([0-9]+).*/\1/' "$WORK/out-$i")))
      ldirs=$((ldirs + $(sed -nE 's/.*directories scanned.*/&/p' "$WORK/out-$i" | sed -E 's/.*, ([0-9]+) directories scanned.*/\1/')))
    done
    left=$(find "$DATA/bench/t" -path "$DATA/bench/t/_delta_log" -prune -o -type f -name '*.parquet' -print | wc -l)
    ok=no
    [ "$deleted" = "$ORPHANS" ] && [ "$left" = "$live" ] && ok=yes
    printf "%d %d %.2f %.2f %.2f %.2f %d %d %s\n" "$n" "$r" "$(echo "$end - $start" | bc)" "$cpu" "$maxcpu" \
      "$(echo "($su + $ss) / $(getconf CLK_TCK)" | bc -l)" "$deleted" "$ldirs" "$ok"
  done
done
rm -rf "$DATA"
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
