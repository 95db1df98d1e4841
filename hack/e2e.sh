#!/usr/bin/env bash
# e2e.sh - the end-to-end test, `make e2e`: build everything, start the single-node cluster, import the image,
# start the S3 test server on the pod bridge, install test/e2e/config (CRDs, RBAC, manager) and run the Go tests
# under test/e2e (build tag e2e), then tear it all down, also on failure.
#
#   phase A  the installation: manager Available under restricted Pod Security, leader Lease, the image runs a
#            `version` Job, pods reach the host's S3 server (tests not named TestMaintenance_*, TestCloud_*,
#            TestStream_*)
#   phase B  the product scenario: a run-now OptimizePolicy compacts an S3 table (TestMaintenance_*)
#   phase C  Azure and GCS tables on Azurite and fake-gcs-server, which the tests start on the bridge (TestCloud_*)
#   phase S  streams: append streams from CSV and NDJSON survive killed ingest pods while a policy clusters the
#            table, an upsert stream applies changes with deletes to another, and the host finds every row
#            exactly once and the upserted table equal to its model (TestStream_*)
#   phase M  monitoring: Debian's prometheus on the host scrapes the manager through config/monitoring's
#            Service with a token bound to deltakeeper-metrics-reader; every dashboard query and alert metric
#            has series, and the maintenance-failing alert fires on broken credentials and resolves after the
#            fix (TestMonitoring_*)
#
# Logs of every component, the manager, the S3 server and the test output go to bin/e2e-logs/.
# Environment: DELTAKEEPER_E2E_PHASES ("A B C S M" by default; "A" runs only phase A), DELTAKEEPER_E2E_KEEP_CLUSTER=1
# (leave the cluster and S3 server running afterwards for debugging), DELTAKEEPER_E2E_RUN (a -run regexp to
# narrow the tests), DELTAKEEPER_DEMO=1 (run hack/demo-scenario.sh instead of the tests: `make demo`), and
# cluster-up.sh's variables (DELTAKEEPER_CLUSTER_DIR, ...). Needs root.
set -euo pipefail
DK_SCRIPT=e2e
# shellcheck source=hack/cluster-lib.sh
source "$(dirname "$0")/cluster-lib.sh"
cd "$DK_ROOT"

# Must match the image in test/e2e/config/kustomization.yaml.
IMAGE=deltakeeper.local/deltakeeper:e2e
PROBE_IMAGE=deltakeeper.local/e2e-probe:e2e
LOGDIR=$DK_ROOT/bin/e2e-logs
PHASES=${DELTAKEEPER_E2E_PHASES:-A B C S M}
KEEP=${DELTAKEEPER_E2E_KEEP_CLUSTER:-0}
MANAGER_NS=deltakeeper-system
MANAGER=deployment/deltakeeper-manager

[[ $(id -u) == 0 ]] || dk_die "must run as root: the cluster runs containerd and a kubelet"
rm -rf "$LOGDIR"
mkdir -p "$LOGDIR"
timings=$LOGDIR/timings.txt
step_start=$SECONDS
step() {   # step NAME: close the previous step's timing and announce the next
  if [[ -n ${step_name:-} ]]; then echo "$step_name: $((SECONDS - step_start))s" >>"$timings"; fi
  step_name=$1 step_start=$SECONDS
  printf '\n== %s (%ss)\n' "$1" "$SECONDS" >&2
}

owned_cluster=0   # set once this run started the cluster; a cluster someone else started is left running
on_exit() {
  local rc=$?
  set +e
  step "collect logs and tear down"
  if [[ -f $DK_KUBECONFIG ]] && dk_pid kube-apiserver >/dev/null; then
    dk_kubectl -n "$MANAGER_NS" logs "$MANAGER" --all-containers --tail=-1 >"$LOGDIR/manager.log" 2>&1
    dk_kubectl -n "$MANAGER_NS" logs "$MANAGER" --all-containers --previous >"$LOGDIR/manager-previous.log" 2>/dev/null ||
      rm -f "$LOGDIR/manager-previous.log"
    { dk_kubectl get nodes,all -A -o wide; dk_kubectl get events -A --sort-by=.lastTimestamp
      dk_kubectl -n "$MANAGER_NS" describe "$MANAGER" pods; } >"$LOGDIR/cluster-state.txt" 2>&1
  fi
  [[ -d $DK_LOGS ]] && mkdir -p "$LOGDIR/cluster" && cp -r "$DK_LOGS"/. "$LOGDIR/cluster/"
  if ((rc != 0)) && [[ -s $LOGDIR/manager.log ]]; then
    echo "---- manager log (last 200 lines; all of it in $LOGDIR/manager.log)" >&2
    tail -n 200 "$LOGDIR/manager.log" >&2
  fi
  if ((KEEP)); then
    echo "e2e: cluster and S3 server kept: source $DK_DIR/env; S3: $(tr '\n' ' ' <"$LOGDIR/s3.env" 2>/dev/null)" >&2
    echo "e2e: stop both with: hack/cluster-down.sh --purge" >&2
  elif ((owned_cluster)); then
    "$DK_ROOT/hack/cluster-down.sh" --purge
  else
    dk_stop s3server 5
  fi
  step "done"
  echo >&2
  cat "$timings" >&2
  if ((rc == 0)); then echo "e2e: PASSED (logs in $LOGDIR)" >&2; else echo "e2e: FAILED (exit $rc; logs in $LOGDIR)" >&2; fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM   # turn Ctrl-C and kill into an ordinary exit, so on_exit tears down

# -------------------------------------------------------------------------------------------------- build
step "build Kubernetes, the S3 server, the images"
K8S_BIN=$(hack/build-k8s.sh all)
S3SERVER=$(hack/build-s3server.sh)
AZURITE=$(hack/build-azurite.sh)
GCSSERVER=$(hack/build-gcsserver.sh)
tarball=$(hack/build-image.sh "$IMAGE")
VERSION=$(bin/deltakeeper version)
mkdir -p bin/e2e
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o bin/e2e/probe ./test/e2e/probe
probe_tarball=bin/images/e2e-probe.tar
go run ./hack/imagetar -o "$probe_tarball" -ref "$PROBE_IMAGE" -add bin/e2e/probe:/usr/local/bin/probe:0755 \
  -entrypoint /usr/local/bin/probe -user 65532:65532 >&2
# Compile the tests now: a compile error should not cost a cluster start to discover.
go vet -tags e2e ./test/e2e/...

# ------------------------------------------------------------------------------------------------ cluster
step "cluster up"
if dk_pid kube-apiserver >/dev/null; then
  dk_log "reusing the running cluster in $DK_DIR (it stays up afterwards)"
else
  # Leftovers of a crashed run (host changes, stale etcd data) would make this run differ from a fresh one.
  [[ -d $DK_DIR ]] && hack/cluster-down.sh --purge
  owned_cluster=1
fi
DELTAKEEPER_K8S_BIN=$K8S_BIN hack/cluster-up.sh
# shellcheck source=/dev/null
source "$DK_DIR/env"

step "load images"
hack/cluster-load-image.sh "$IMAGE" "$tarball"
hack/cluster-load-image.sh "$PROBE_IMAGE" "$probe_tarball"

# ---------------------------------------------------------------------------------------------- S3 server
# Bound to the bridge address, so the host (test setup, demo data) and the pods (probe, worker Jobs) use the
# same endpoint. Port 0 and the address from the log avoid picking a port that is then taken.
step "S3 test server"
s3_data=$DK_DIR/e2e-s3
bucket=e2e
mkdir -p "$s3_data/$bucket"   # rclone's local backend: a bucket is a directory
access_key=e2e$(openssl rand -hex 8)
secret_key=$(openssl rand -hex 20)
# Registered with the cluster's pid bookkeeping, so hack/cluster-down.sh stops it even after a crashed run.
# A fresh one every run: the keys are new, and the address is read from a fresh log.
dk_stop s3server 5
: >"$DK_LOGS/s3server.log"
dk_start s3server "$S3SERVER" serve s3 --config "" --addr "$DK_BRIDGE_IP:0" --auth-key "$access_key,$secret_key" \
  --log-level NOTICE "$s3_data"
endpoint=
for _ in $(seq 1 150); do
  endpoint=$(sed -n 's|.*Starting s3 server on \[\(http://[^]/ ]*\)/*\].*|\1|p' "$DK_LOGS/s3server.log" | head -n1)
  [[ -n $endpoint ]] && curl -s -o /dev/null "$endpoint/" && break
  dk_pid s3server >/dev/null || { dk_tail s3server; dk_die "the S3 server exited"; }
  sleep 0.1
done
[[ -n $endpoint ]] || { dk_tail s3server; dk_die "the S3 server did not start"; }
printf 'endpoint=%s\nbucket=%s\naccess_key=%s\nsecret_key=%s\n' "$endpoint" "$bucket" "$access_key" "$secret_key" >"$LOGDIR/s3.env"
dk_log "S3 server at $endpoint, bucket $bucket, data in $s3_data"

# ---------------------------------------------------------------------------------------- install manager
step "install CRDs, RBAC and the manager"
dk_kubectl apply --server-side -k test/e2e/config >"$LOGDIR/install.log"
if ! dk_kubectl -n "$MANAGER_NS" wait --for=condition=Available "$MANAGER" --timeout=180s; then
  dk_kubectl -n "$MANAGER_NS" describe "$MANAGER" pods >&2
  dk_die "the manager did not become Available"
fi

# ------------------------------------------------------------------------------------------------- tests
export DELTAKEEPER_E2E_KUBECTL=$K8S_BIN/kubectl
export DELTAKEEPER_E2E_IMAGE=$IMAGE
export DELTAKEEPER_E2E_PROBE_IMAGE=$PROBE_IMAGE
export DELTAKEEPER_E2E_VERSION=$VERSION
export DELTAKEEPER_E2E_BINARY=$DK_ROOT/bin/deltakeeper
export DELTAKEEPER_E2E_S3_ENDPOINT=$endpoint
export DELTAKEEPER_E2E_S3_BUCKET=$bucket
export AWS_ACCESS_KEY_ID=$access_key AWS_SECRET_ACCESS_KEY=$secret_key AWS_REGION=us-east-1
export DELTAKEEPER_S3SERVER=$S3SERVER   # test/e2e/probe's own test starts a server too
export DELTAKEEPER_AZURITE=$AZURITE DELTAKEEPER_GCSSERVER=$GCSSERVER   # phase C starts them on the bridge
if [[ ${DELTAKEEPER_DEMO:-0} == 1 ]]; then
  step "demo"
  hack/demo-scenario.sh
  exit 0
fi
failed=()
run_phase() {   # run_phase NAME GO_TEST_SELECTION...
  local name=$1
  shift
  step "phase $name tests"
  local sel=("$@")
  [[ -n ${DELTAKEEPER_E2E_RUN:-} ]] && sel+=(-run "$DELTAKEEPER_E2E_RUN")
  if ! go test -tags e2e -count=1 -timeout 20m -v "${sel[@]}" ./test/e2e/... 2>&1 | tee "$LOGDIR/go-test-phase-$name.log"; then
    failed+=("$name")
  fi
}
for phase in $PHASES; do
  case $phase in
    A) run_phase A -skip '^Test(Maintenance|Cloud|Stream|Monitoring)_' ;;
    B) run_phase B -run '^TestMaintenance_' ;;
    C) run_phase C -run '^TestCloud_' ;;
    S) run_phase S -run '^TestStream_' ;;
    M) run_phase M -run '^TestMonitoring_' ;;
    *) dk_die "unknown phase $phase in DELTAKEEPER_E2E_PHASES (A, B, C, S, M)" ;;
  esac
done
if ((${#failed[@]})); then
  if [[ " ${failed[*]} " == *" S "* ]]; then
    echo "e2e: phase S needs \`deltakeeper worker ingest\` (see test/e2e/stream_test.go)" >&2
  fi
  if [[ " ${failed[*]} " == *" B "* ]]; then
    echo "e2e: phase B needs \`deltakeeper worker inspect\`, \`deltakeeper worker maintain\` and \`deltakeeper demo-data\` (see test/e2e/maintenance_test.go)" >&2
  fi
  dk_die "phase ${failed[*]} failed"
fi
