#!/usr/bin/env bash
# demo-scenario.sh - the story `make demo` tells, run by hack/e2e.sh in demo mode once the cluster, the S3
# server and the manager are up (it receives their coordinates in DELTAKEEPER_E2E_* variables):
#   1. a Delta table of 60 small files lands in the bucket (as a streaming writer would leave it);
#   2. a DeltaTable tells the operator where it is, and an OptimizePolicy with run-now asks for maintenance;
#   3. a real worker pod compacts it; kubectl shows what happened; the rows are the same before and after;
#   4. a StreamIngest keeps a second table fed from CSV files landing under a prefix: `kubectl get si` shows
#      its batches and its backlog draining, and every row that landed is in the table once.
set -euo pipefail
kubectl() { "$DELTAKEEPER_E2E_KUBECTL" "$@"; }
dk() { "$DELTAKEEPER_E2E_BINARY" "$@"; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '\033[2m$ %s\033[0m\n' "$*"; "$@"; }

export AWS_ENDPOINT_URL_S3=$DELTAKEEPER_E2E_S3_ENDPOINT DELTAKEEPER_S3_PATH_STYLE=true
DK_ROOT_DIR=$(cd "$(dirname "$0")/.." && pwd)
ns=demo
table=s3://$DELTAKEEPER_E2E_S3_BUCKET/sales/orders

say "1. A table with many small files, written to the S3 server on $AWS_ENDPOINT_URL_S3"
dk demo-data "$table" --files 60 --rows-per-file 2000 >/dev/null
show dk inspect "$table"
rows_before=$(dk scan "$table" --format jsonl | sort | sha256sum)

say "2. Tell the operator about it, and ask for maintenance now"
kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl -n "$ns" create secret generic lakehouse-s3 --from-literal=AWS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" \
  --from-literal=AWS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
manifest=$(cat <<YAML
apiVersion: deltakeeper.io/v1
kind: DeltaTable
metadata:
  name: orders
  namespace: $ns
  labels: {deltakeeper.io/tier: gold}
spec:
  location: $table
  storage:
    s3:
      endpoint: $AWS_ENDPOINT_URL_S3
      region: us-east-1
      forcePathStyle: true
      credentials:
        secretRef: {name: lakehouse-s3}
  properties:
    targetFileSize: 128Mi
    checkpointInterval: 10
---
apiVersion: deltakeeper.io/v1
kind: OptimizePolicy
metadata:
  name: nightly-gold
  namespace: $ns
  annotations: {deltakeeper.io/run-now: "demo-1"}
spec:
  targets:
    selector: {matchLabels: {deltakeeper.io/tier: gold}}
  schedule: "0 3 * * *"
  triggers: {minSmallFiles: 50}
  vacuum: {retention: 168h}
YAML
)
echo "$manifest"
echo "$manifest" | kubectl apply -f -

say "3. The operator inspects the table, then a worker Job compacts it"
# Done when a finished maintenance run with an Optimize step is recorded and an inspection after it made the
# table Ready again (the status then describes the compacted table).
maintained() {
  local ops ready
  ops=$(kubectl -n "$ns" get deltatable orders -o jsonpath='{range .status.recentRuns[*]}{.operations}{.completionTime}{"\n"}{end}' 2>/dev/null)
  ready=$(kubectl -n "$ns" get deltatable orders -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)
  [[ $ready == True ]] && grep -q 'Optimize.*Z' <<<"$ops" && [[ -z $(kubectl -n "$ns" get deltatable orders -o jsonpath='{.status.activeJob}') ]]
}
deadline=$((SECONDS + 300))
until maintained; do
  if ((SECONDS > deadline)); then
    kubectl -n "$ns" get jobs,pods
    echo "demo: no maintenance run finished within 5 minutes" >&2
    exit 1
  fi
  sleep 2
done
show kubectl -n "$ns" get jobs
show kubectl -n "$ns" get deltatables,optimizepolicies

rows_after=$(dk scan "$table" --format jsonl | sort | sha256sum)
say "4. Same rows, fewer files"
show dk inspect "$table"
if [[ $rows_before == "$rows_after" ]]; then
  echo "rows before and after are identical (sha256 of the sorted rows: ${rows_after%% *})"
else
  echo "demo: the rows changed!" >&2
  exit 1
fi

say "kubectl describe deltatable orders"
kubectl -n "$ns" describe deltatable orders

say "5. A stream keeps a table fed from CSV files landing under s3://$DELTAKEEPER_E2E_S3_BUCKET/landing/clicks/"
landing=s3://$DELTAKEEPER_E2E_S3_BUCKET/landing/clicks/
go build -o "$DK_ROOT_DIR/bin/demo-drop" ./hack/demo-drop
next_id=1 files=0
drop() { # drop N: N CSV files of 2000 rows land under the prefix, one PUT each
  "$DK_ROOT_DIR/bin/demo-drop" --first-file "$files" --files "$1" --rows 2000 --first-id "$next_id" "$landing"
  files=$((files + $1)) next_id=$((next_id + $1 * 2000))
}
drop 150 # a backlog: more than one Job takes in its time budget
stream=$(cat <<YAML
apiVersion: deltakeeper.io/v1
kind: DeltaTable
metadata:
  name: clicks
  namespace: $ns
spec:
  location: s3://$DELTAKEEPER_E2E_S3_BUCKET/sales/clicks
  storage:
    s3:
      endpoint: $AWS_ENDPOINT_URL_S3
      region: us-east-1
      forcePathStyle: true
      credentials:
        secretRef: {name: lakehouse-s3}
---
apiVersion: deltakeeper.io/v1
kind: StreamIngest
metadata:
  name: clicks-csv
  namespace: $ns
spec:
  source:
    files:
      location: s3://$DELTAKEEPER_E2E_S3_BUCKET/landing/clicks/
      format: csv
      options: {header: "true"}
  target: clicks
  trigger: {interval: 10s}
  maxFilesPerTrigger: 1
  autoCompact: true
YAML
)
echo "$stream"
echo "$stream" | kubectl apply -f -
# Files keep landing for a while; the stream's short Jobs take one file a batch for 10s each, so the
# backlog shows in `kubectl get si` and drains.
rounds=0 last_drop_jobs=0 deadline=$((SECONDS + 300))
while :; do
  ((rounds < 6)) && drop 4
  rounds=$((rounds + 1))
  sleep 5
  show kubectl -n "$ns" get si clicks-csv
  backlog=$(kubectl -n "$ns" get si clicks-csv -o jsonpath='{.status.backlog.files}')
  reason=$(kubectl -n "$ns" get si clicks-csv -o jsonpath='{.status.conditions[?(@.type=="Stalled")].reason}')
  started=$(kubectl -n "$ns" get si clicks-csv -o jsonpath='{.status.jobsStarted}')
  # Caught up after the last drop: a Job that started after it left no backlog.
  if ((rounds > 6)) && [[ $backlog == 0 && $reason == CaughtUp ]] && ((started > last_drop_jobs)); then
    break
  fi
  ((rounds == 6)) && last_drop_jobs=${started:-0}
  if ((SECONDS > deadline)); then
    kubectl -n "$ns" describe si clicks-csv
    echo "demo: the stream did not catch up within 5 minutes" >&2
    exit 1
  fi
done
rows=$(dk scan "s3://$DELTAKEEPER_E2E_S3_BUCKET/sales/clicks" --format jsonl | wc -l)
say "6. Every landed row is in the table once"
echo "$files files with $((next_id - 1)) rows landed; the table holds $rows rows"
if ((rows != next_id - 1)); then
  echo "demo: the table holds $rows rows, want $((next_id - 1))" >&2
  exit 1
fi
say "kubectl describe streamingest clicks-csv"
kubectl -n "$ns" describe si clicks-csv
