# shellcheck shell=bash disable=SC2034  # sourced: the variables are used by the scripts that source it
# cluster-lib.sh - sourced (not run) by hack/cluster-up.sh, cluster-down.sh, cluster-load-image.sh and e2e.sh:
# the e2e cluster's names, addresses and paths in one place, plus pid bookkeeping.
#
# Everything the cluster owns lives under $DELTAKEEPER_CLUSTER_DIR (default /tmp/deltakeeper-cluster):
#   state/   certificates, etcd data, containerd root and state, CNI config and IPAM, kubelet root, pod logs
#   run/     pid files and the markers cluster-down.sh uses to undo host changes
#   logs/    one log per component
#   admin.kubeconfig, env (shell variables for scripts and tests)

DK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DK_DIR=${DELTAKEEPER_CLUSTER_DIR:-/tmp/deltakeeper-cluster}
DK_STATE=$DK_DIR/state
DK_RUN=$DK_DIR/run
DK_LOGS=$DK_DIR/logs
DK_KUBECONFIG=$DK_DIR/admin.kubeconfig
DK_CTR_SOCK=$DK_STATE/containerd/containerd.sock

# Ports sit in an unusual range so the cluster can run next to envtest, a developer's own cluster or the
# reference recipe. Everything listens on 127.0.0.1 only.
DK_API_PORT=16443
DK_ETCD_PORT=16379
DK_ETCD_PEER_PORT=16380
DK_KUBELET_PORT=16250
DK_KUBELET_HEALTHZ_PORT=16248
DK_KCM_PORT=16257
DK_SCHEDULER_PORT=16259

# The node is named after its IP: the kubelet refuses a loopback --node-ip but takes an IP-shaped hostname
# as the node's InternalIP, which is what the API server dials for logs and exec.
DK_NODE=127.0.0.1
# Pods live on their own bridge; its host side is the gateway and the address host-side test servers bind to.
DK_BRIDGE=${DELTAKEEPER_CLUSTER_BRIDGE:-dkbr0}
DK_POD_PREFIX=${DELTAKEEPER_CLUSTER_POD_PREFIX:-10.77.0}
DK_POD_SUBNET=$DK_POD_PREFIX.0/24
DK_BRIDGE_IP=$DK_POD_PREFIX.1
# There is no kube-proxy: the one Service that matters, default/kubernetes, is a DNAT to the API server.
DK_SERVICE_CIDR=10.0.0.0/24
DK_SERVICE_IP=10.0.0.1
DK_NAT_CHAIN=DELTAKEEPER-APISERVER
DK_FILTER_CHAIN=DELTAKEEPER-ISOLATE
DK_CNI_NETWORK=deltakeeper-e2e
DK_PAUSE_IMAGE=deltakeeper.local/pause:1

dk_log() { printf '[%s %5ss] %s\n' "${DK_SCRIPT:-cluster}" "$SECONDS" "$*" >&2; }
dk_die() { printf '%s: ERROR: %s\n' "${DK_SCRIPT:-cluster}" "$*" >&2; exit 1; }

# dk_kubectl runs the kubectl that hack/build-k8s.sh built (the version matching the cluster) against it.
dk_kubectl() {
  local bin
  bin=$(cat "$DK_RUN/k8s-bin" 2>/dev/null) || dk_die "no cluster state in $DK_DIR: run hack/cluster-up.sh"
  "$bin/kubectl" --kubeconfig "$DK_KUBECONFIG" "$@"
}

# A pid file holds "PID STARTTIME": the start time (field 22 of /proc/PID/stat) tells our process apart from
# an unrelated one that got the same pid after ours died, so we never signal a stranger.
dk_starttime() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  # The command name (field 2) may contain spaces and parentheses: cut everything up to its closing ")".
  # shellcheck disable=SC2086
  set -- ${stat##*) }
  # A zombie has exited already; it only waits for a parent that may never reap it.
  [[ $1 != Z ]] || return 1
  echo "${20}"
}

# dk_pid NAME prints the recorded pid if that process is still the one we started.
dk_pid() {
  local f=$DK_RUN/$1.pid pid start
  [[ -f $f ]] || return 1
  read -r pid start <"$f" || return 1
  [[ -n $pid && $(dk_starttime "$pid") == "$start" ]] || return 1
  echo "$pid"
}

# dk_start NAME CMD... starts a daemon in its own session (so a Ctrl-C in the calling terminal reaches the
# scripts' traps, not the cluster), logging to logs/NAME.log. A running NAME is left alone.
dk_start() {
  local name=$1 pid
  shift
  if pid=$(dk_pid "$name"); then
    dk_log "$name already running (pid $pid)"
    return 0
  fi
  rm -f "$DK_RUN/$name.pid" "$DK_RUN/$name.pid.tmp"
  # The inner shell records its own pid and then execs the daemon, so the pid is the daemon's whether or not
  # setsid had to fork.
  # shellcheck disable=SC2016  # $$ and $@ belong to the inner shell
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$DK_RUN/$name.pid.tmp" "$@" >>"$DK_LOGS/$name.log" 2>&1 </dev/null &
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -s $DK_RUN/$name.pid.tmp ]] && break
    sleep 0.05
  done
  read -r pid <"$DK_RUN/$name.pid.tmp" || dk_die "could not start $name"
  echo "$pid $(dk_starttime "$pid")" >"$DK_RUN/$name.pid"
  rm -f "$DK_RUN/$name.pid.tmp"
  dk_log "started $name (pid $pid, log $DK_LOGS/$name.log)"
}

# dk_stop NAME [GRACE_SECONDS] sends SIGTERM to a recorded daemon, then SIGKILL after the grace period.
dk_stop() {
  local name=$1 grace=${2:-20} pid i
  if pid=$(dk_pid "$name"); then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do
      [[ $(dk_starttime "$pid") ]] || break
      sleep 0.1
    done
    if [[ $(dk_starttime "$pid") ]]; then
      dk_log "$name (pid $pid) still running after ${grace}s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
    fi
    dk_log "stopped $name (pid $pid)"
  fi
  rm -f "$DK_RUN/$name.pid"
}

# dk_tail NAME prints the end of a component's log, for error messages.
dk_tail() {
  echo "---- last lines of $DK_LOGS/$1.log" >&2
  tail -n "${2:-40}" "$DK_LOGS/$1.log" >&2 2>/dev/null || true
}
