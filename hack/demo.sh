#!/usr/bin/env bash
# demo.sh - the README's first command (`make demo`): on a fresh machine, installs the host packages the
# cluster needs, builds Kubernetes, the S3 server and deltakeeper from source, brings up a real single-node
# cluster with the operator, and shows it compacting a small-file Delta table on S3 through a real worker pod;
# it ends with `kubectl describe deltatable`, then tears everything down. Needs root (containerd, kubelet).
#   DELTAKEEPER_E2E_KEEP_CLUSTER=1 make demo   keep the cluster running afterwards (hack/cluster-down.sh --purge)
#   make demo-cli                              the same story with no cluster at all, on a local table
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/hack/install-host-deps.sh"
DELTAKEEPER_DEMO=1 DELTAKEEPER_E2E_PHASES=B exec "$root/hack/e2e.sh"
