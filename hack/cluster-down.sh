#!/usr/bin/env bash
# cluster-down.sh [--purge] - stop the e2e cluster started by hack/cluster-up.sh and undo its host changes.
#
#   hack/cluster-down.sh           stop everything, keep state and logs under $DELTAKEEPER_CLUSTER_DIR
#                                  (certificates, etcd data, images: the next cluster-up.sh is quicker)
#   hack/cluster-down.sh --purge   also delete $DELTAKEEPER_CLUSTER_DIR
#
# Processes are stopped by the pids cluster-up.sh recorded (checked against their start time), never by name.
# Host changes are undone from the markers under run/: mounts under the cluster directory, the bridge, our
# iptables chains and the KUBE-* chains the kubelet added, the kernel tunables the kubelet rewrote, host paths
# and cgroups that did not exist before. Safe to run repeatedly and after a crashed cluster-up.sh.
set -uo pipefail   # no -e: one failed step must not leave the rest of the host dirty
DK_SCRIPT=cluster-down
# shellcheck source=hack/cluster-lib.sh
source "$(dirname "$0")/cluster-lib.sh"
purge=0
case ${1:-} in
  --purge) purge=1 ;;
  "") ;;
  *) echo "usage: $0 [--purge]" >&2; exit 2 ;;
esac
[[ $(id -u) == 0 ]] || dk_die "must run as root"
[[ -d $DK_DIR ]] || { dk_log "nothing to do: no $DK_DIR"; exit 0; }
BEFORE=$DK_RUN/host-before

# 0. Helpers that scripts registered with dk_start next to the cluster (hack/e2e.sh's S3 server).
core="containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet"
for f in "$DK_RUN"/*.pid; do
  [[ -f $f ]] || continue
  name=$(basename "$f" .pid)
  [[ " $core " == *" $name "* ]] || dk_stop "$name" 5
done

# 1. No new pods start: the scheduler goes first. The controller manager stays until the pods are gone:
#    Job pods carry the batch.kubernetes.io/job-tracking finalizer, which only its Job controller removes, so
#    without it their deletion would hang until the timeout. Replacement pods it creates stay Pending.
dk_stop kube-scheduler

# 2. Let the kubelet tear the pods down itself (CNI DEL, volume unmounts) while the API server still runs.
if dk_pid kube-apiserver >/dev/null && dk_pid kubelet >/dev/null; then
  if [[ -n $(dk_kubectl get pods -A -o name 2>/dev/null) ]]; then
    dk_log "deleting all pods through the kubelet"
    dk_kubectl delete pods --all -A --grace-period=2 --wait --timeout=60s >/dev/null 2>&1 ||
      dk_kubectl delete pods --all -A --grace-period=0 --force --wait=false >/dev/null 2>&1
  fi
fi
dk_stop kube-controller-manager
dk_stop kubelet

# 3. Whatever still runs in our containerd: kill and delete its tasks, then stop containerd.
if dk_pid containerd >/dev/null && [[ -S $DK_CTR_SOCK ]]; then
  for ns in $(ctr -a "$DK_CTR_SOCK" namespaces ls -q 2>/dev/null); do
    tasks=$(ctr -a "$DK_CTR_SOCK" -n "$ns" tasks ls -q 2>/dev/null)
    [[ -n $tasks ]] || continue
    for t in $tasks; do ctr -a "$DK_CTR_SOCK" -n "$ns" tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done
    sleep 1
    for t in $tasks; do ctr -a "$DK_CTR_SOCK" -n "$ns" tasks delete -f "$t" >/dev/null 2>&1; done
  done
fi
dk_stop containerd
# Containers and shims that outlived containerd (a crashed run, say). containerd 1.6 records no shim pids, so
# they are found by what is provably ours: container processes sit in the kubepods cgroups, which did not exist
# before cluster-up.sh; a shim's working directory is its bundle in our containerd state.
our_cgroups() { [[ -f $BEFORE/absent-paths ]] && grep '^/sys/fs/cgroup/' "$BEFORE/absent-paths"; }
leftovers() {
  local path p
  for path in $(our_cgroups); do
    [[ -d $path ]] && find "$path" -name cgroup.procs -exec cat {} + 2>/dev/null
  done
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/cwd" 2>/dev/null) == "$DK_STATE/containerd/state/"* ]] && echo "${p#/proc/}"
  done
}
for _ in 1 2 3; do
  pids=$(leftovers | sort -un)
  [[ -n $pids ]] || break
  dk_log "killing leftover container and shim processes: $(tr '\n' ' ' <<<"$pids")"
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null
  sleep 1
done

# 4. Control plane.
dk_stop kube-apiserver
dk_stop etcd

# 5. Mounts under the cluster directory (container root filesystems, pod volumes, network namespaces, shm),
# deepest first; a few rounds because unmounting one may uncover another.
mounts_below() { findmnt -rn -o TARGET | awk -v d="$DK_DIR/" 'index($0, d) == 1' | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-; }
for _ in 1 2 3; do
  mapfile -t mounts < <(mounts_below)
  ((${#mounts[@]})) || break
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
done
mapfile -t mounts < <(mounts_below)
((${#mounts[@]} == 0)) || dk_log "WARNING: ${#mounts[@]} mounts under $DK_DIR remain: ${mounts[*]}"

# 6. Network: our NAT and filter chains, the bridge, and the KUBE-* chains the kubelet created.
iptables -t nat -D PREROUTING -i "$DK_BRIDGE" -j "$DK_NAT_CHAIN" 2>/dev/null
iptables -t nat -D OUTPUT -d "$DK_SERVICE_IP/32" -j "$DK_NAT_CHAIN" 2>/dev/null
iptables -t nat -F "$DK_NAT_CHAIN" 2>/dev/null && iptables -t nat -X "$DK_NAT_CHAIN" 2>/dev/null
iptables -t filter -D FORWARD -j "$DK_FILTER_CHAIN" 2>/dev/null
iptables -t filter -F "$DK_FILTER_CHAIN" 2>/dev/null && iptables -t filter -X "$DK_FILTER_CHAIN" 2>/dev/null
if [[ -f $DK_RUN/bridge.created ]]; then
  ip link del "$DK_BRIDGE" 2>/dev/null
  ip link show "$DK_BRIDGE" >/dev/null 2>&1 || rm -f "$DK_RUN/bridge.created"
fi
if [[ -f $BEFORE/iptables-chains ]]; then
  for family in iptables ip6tables; do
    for table in filter nat mangle raw; do
      for chain in $("$family" -t "$table" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}'); do
        grep -qxF "$family $table $chain" "$BEFORE/iptables-chains" && continue
        # Remove the rules that jump to the chain, then the chain itself. The rules are replayed with eval
        # because -S quotes comments that contain spaces.
        "$family" -t "$table" -S 2>/dev/null | awk -v c="$chain" '$1 == "-A" && $0 ~ (" -j " c "( |$)")' |
          while read -r rule; do eval "\"\$family\" -t \"\$table\" -D ${rule#-A }" 2>/dev/null; done
        "$family" -t "$table" -F "$chain" 2>/dev/null
        "$family" -t "$table" -X "$chain" 2>/dev/null || dk_log "WARNING: could not delete $family $table $chain"
      done
    done
  done
fi
rm -rf "$DK_STATE/cni/ipam"/*   # IP reservations of pods that are gone

# 7. Kernel tunables the kubelet changed.
if [[ -f $BEFORE/sysctl ]]; then
  while read -r key value; do
    [[ $(cat "/proc/sys/$key") == "$value" ]] || echo "$value" >"/proc/sys/$key"
  done <"$BEFORE/sysctl"
fi

# 8. Host paths that did not exist before cluster-up.sh. Cgroup directories go deepest first with rmdir (the
# only way to remove a cgroup); the others are plain directories the runtime or the kubelet made for us.
if [[ -f $BEFORE/absent-paths ]]; then
  while read -r path; do
    [[ -e $path ]] || continue
    if [[ $path == /sys/fs/cgroup/* ]]; then
      find "$path" -depth -type d -exec rmdir {} \; 2>/dev/null
    else
      rm -rf "$path"
    fi
    [[ -e $path ]] && dk_log "WARNING: could not remove $path"
  done <"$BEFORE/absent-paths"
fi
# Symlinks the kubelet left in a pre-existing /var/log/containers, and libcni cache entries of our network.
for link in /var/log/containers/*; do
  [[ -L $link && $(readlink "$link") == "$DK_DIR"/* ]] && rm -f "$link"
done
rm -f /var/lib/cni/results/"$DK_CNI_NETWORK"-* 2>/dev/null

# 9. Done: forget the host snapshot so the next cluster-up.sh takes a fresh one.
leftover=0
if [[ -n $(leftovers) ]]; then dk_log "WARNING: container or shim processes remain: $(leftovers | sort -un | tr '\n' ' ')"; leftover=1; fi
for path in $(our_cgroups); do
  [[ -d $path ]] && leftover=1
done
for f in "$DK_RUN"/*.pid; do
  [[ -f $f ]] || continue
  name=$(basename "$f" .pid)
  dk_pid "$name" >/dev/null && { dk_log "WARNING: $name is still running"; leftover=1; }
done
if ((leftover == 0)); then
  rm -rf "$BEFORE"
fi
if ((purge)); then
  if ((leftover)) || [[ -n $(mounts_below) ]]; then
    dk_die "not purging $DK_DIR: processes, cgroups or mounts remain (see warnings above); the state stays so that a second cluster-down.sh can retry"
  fi
  rm -rf "$DK_DIR"
  dk_log "purged $DK_DIR"
fi
dk_log "done"
