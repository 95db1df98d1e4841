#!/usr/bin/env bash
# torture.sh - `make torture`: the full torture suite (test/torture at DELTAKEEPER_TORTURE=full; per backend —
# local disk, the S3 test server, Azurite — 120 SIGKILLs of the maintenance commands and ingest, 100 of the
# keyed writers (merge, upsert ingest, delete), 300 commits of appenders racing maintenance; merges racing
# appends and a clustering loop; 260 runs through the S3 fault proxy). `make test` runs the same suite at CI
# size.
#
#   DELTAKEEPER_TORTURE_SEED=<n> hack/torture.sh     replays a run (the seed is printed at the start)
#   TORTURE_RUN='TestCrash/s3/.*' hack/torture.sh    narrows it (go test -run)
#
# The log is kept in bin/torture.log; the figures (kills, commits, fault runs, pending checks) end it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
DELTAKEEPER_S3SERVER=$(hack/build-s3server.sh)
DELTAKEEPER_AZURITE=$(hack/build-azurite.sh)
export DELTAKEEPER_S3SERVER DELTAKEEPER_AZURITE
export DELTAKEEPER_TORTURE=full
mkdir -p bin
start=$(date +%s)
status=0
go test -count=1 -timeout 180m -v -run "${TORTURE_RUN:-.}" ./test/torture/ 2>&1 | tee bin/torture.log || status=$?
echo "torture.sh: wall time $(( $(date +%s) - start ))s; log in bin/torture.log"
exit "$status"
