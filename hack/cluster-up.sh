#!/usr/bin/env bash
# cluster-up.sh - start a real single-node Kubernetes cluster for the end-to-end tests, without Docker or kind:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubelet built from the Go module proxy by
# hack/build-k8s.sh, Debian's containerd + runc as the container runtime, the CNI bridge plugin for pods.
#
#   sudo hack/cluster-up.sh
#   export KUBECONFIG=/tmp/deltakeeper-cluster/admin.kubeconfig    (also in /tmp/deltakeeper-cluster/env)
#   hack/cluster-down.sh [--purge]
#
# Idempotent: certificates and configuration are made once, running components are left alone, so running it
# again repairs a half-started cluster. Every host change (bridge, iptables, sysctls, host directories the
# kubelet creates, cgroups) is recorded under run/ first so hack/cluster-down.sh can undo exactly that.
#
# Environment: DELTAKEEPER_CLUSTER_DIR (default /tmp/deltakeeper-cluster), DELTAKEEPER_K8S_BIN (folder with the
# Kubernetes binaries; default: build them with hack/build-k8s.sh all), DELTAKEEPER_CLUSTER_POD_PREFIX (three
# octets, default 10.77.0), DELTAKEEPER_CLUSTER_BRIDGE (default dkbr0), DELTAKEEPER_CLUSTER_TIMEOUT (seconds to
# wait for the node, default 180).
set -euo pipefail
DK_SCRIPT=cluster-up
# shellcheck source=hack/cluster-lib.sh
source "$(dirname "$0")/cluster-lib.sh"
TIMEOUT=${DELTAKEEPER_CLUSTER_TIMEOUT:-180}

# ---------------------------------------------------------------------------------------------- preflight
[[ $(id -u) == 0 ]] || dk_die "must run as root (it starts containerd and the kubelet and changes iptables)"
missing=()
for tool in containerd containerd-shim-runc-v2 runc ctr iptables ip6tables ip openssl curl findmnt setsid go; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
CNI_BIN=
for dir in /usr/lib/cni /opt/cni/bin; do
  if [[ -x $dir/bridge && -x $dir/host-local && -x $dir/loopback ]]; then CNI_BIN=$dir; break; fi
done
[[ -n $CNI_BIN ]] || missing+=("CNI plugins (bridge, host-local, loopback)")
if (( ${#missing[@]} )); then
  dk_die "missing: ${missing[*]}. Install them with: apt-get install containerd runc containernetworking-plugins iptables (openssl, curl, util-linux and Go come with the CI image)"
fi
[[ -d /sys/fs/cgroup ]] || dk_die "no /sys/fs/cgroup: the kubelet needs cgroups"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
grep -qw overlay /proc/filesystems || dk_die "the kernel has no overlay filesystem, which containerd's snapshotter needs"

mkdir -p "$DK_STATE"/{pki,kubeconfig,etcd,containerd,cni/net.d,cni/ipam,kubelet/root,kubelet/pods-logs,images} \
         "$DK_RUN" "$DK_LOGS"
chmod 700 "$DK_STATE/etcd" "$DK_STATE/pki"

if [[ -n ${DELTAKEEPER_K8S_BIN:-} ]]; then
  K8S_BIN=$DELTAKEEPER_K8S_BIN
else
  dk_log "building (or reusing) the Kubernetes binaries: hack/build-k8s.sh all"
  K8S_BIN=$("$DK_ROOT/hack/build-k8s.sh" all)
fi
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
  [[ -x $K8S_BIN/$b ]] || dk_die "missing $K8S_BIN/$b: run hack/build-k8s.sh all"
done
echo "$K8S_BIN" >"$DK_RUN/k8s-bin"
KUBECTL=$K8S_BIN/kubectl

# ------------------------------------------------------------------------ record the host before we change it
# Written once per up/down cycle: a second cluster-up must not take the kubelet's values for the originals.
BEFORE=$DK_RUN/host-before
if [[ ! -f $BEFORE/complete ]]; then
  mkdir -p "$BEFORE"
  # The kubelet rewrites these kernel tunables at start (container_manager_linux.go, setupKernelTunables).
  for key in vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops \
             kernel/keys/root_maxkeys kernel/keys/root_maxbytes; do
    [[ -f /proc/sys/$key ]] && echo "$key $(cat "/proc/sys/$key")"
  done >"$BEFORE/sysctl"
  # Chains that exist now are not ours to delete later; the kubelet adds KUBE-* chains of its own.
  for family in iptables ip6tables; do
    for table in filter nat mangle raw; do
      "$family" -t "$table" -S 2>/dev/null | awk -v f="$family" -v t="$table" '$1 == "-N" || $1 == "-P" {print f, t, $2}'
    done
  done >"$BEFORE/iptables-chains"
  # Host paths the runtime or kubelet create outside our directory (libcni's result cache, the container log
  # symlinks, shim sockets, cgroup hierarchies): only those absent now are removed by cluster-down.sh.
  : >"$BEFORE/absent-paths"
  # On cgroup v1 the kubelet makes a kubepods hierarchy in every controller, on v2 one at the top.
  # /run/mount is libmount's table of mounts made with the mount command (the kubelet mounts that way).
  paths=(/var/lib/cni /var/log/containers /var/log/pods /run/containerd /run/mount /var/lib/kubelet /etc/cni
         /sys/fs/cgroup/kubepods)
  for controller in /sys/fs/cgroup/*/; do paths+=("${controller}kubepods"); done
  for path in "${paths[@]}"; do
    [[ -e $path ]] || echo "$path" >>"$BEFORE/absent-paths"
  done
  touch "$BEFORE/complete"
fi

# ----------------------------------------------------------------------------------- certificates (openssl)
PKI=$DK_STATE/pki
new_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
# issue NAME SUBJECT EXTENDED_KEY_USAGE [SUBJECT_ALT_NAMES]: a leaf certificate signed by the cluster CA.
issue() {
  local name=$1 subject=$2 usage=$3 sans=${4:-}
  [[ -f $PKI/$name.crt ]] && return 0
  new_key "$PKI/$name.key"
  {
    echo "basicConstraints = critical, CA:FALSE"
    echo "keyUsage = critical, digitalSignature"
    echo "extendedKeyUsage = $usage"
    [[ -z $sans ]] || echo "subjectAltName = $sans"
  } >"$PKI/$name.ext"
  openssl req -new -key "$PKI/$name.key" -subj "$subject" 2>/dev/null |
    openssl x509 -req -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 3650 -sha256 \
      -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.ext"
}
if [[ ! -f $PKI/ca.crt ]]; then
  new_key "$PKI/ca.key"
  openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=deltakeeper-e2e-ca" -days 3650 -sha256 \
    -addext "basicConstraints = critical, CA:TRUE" -addext "keyUsage = critical, keyCertSign, cRLSign, digitalSignature" \
    -out "$PKI/ca.crt" 2>/dev/null
fi
issue kube-apiserver "/CN=kube-apiserver" serverAuth \
  "IP:127.0.0.1, IP:$DK_SERVICE_IP, IP:$DK_BRIDGE_IP, DNS:localhost, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local"
issue apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
issue admin "/O=system:masters/CN=deltakeeper-e2e-admin" clientAuth
issue kube-controller-manager "/CN=system:kube-controller-manager" clientAuth
issue kube-scheduler "/CN=system:kube-scheduler" clientAuth
issue kubelet-client "/O=system:nodes/CN=system:node:$DK_NODE" clientAuth
issue kubelet-serving "/CN=$DK_NODE" serverAuth "IP:127.0.0.1, DNS:localhost"
if [[ ! -f $PKI/service-account.key ]]; then   # signs and verifies ServiceAccount tokens
  new_key "$PKI/service-account.key"
  openssl pkey -in "$PKI/service-account.key" -pubout -out "$PKI/service-account.pub"
fi
chmod 600 "$PKI"/*.key

# kubeconfig FILE CERT: a kubeconfig for one client certificate, certificates embedded.
kubeconfig() {
  local file=$DK_STATE/kubeconfig/$1.kubeconfig cert=$2
  [[ -f $file ]] && return 0
  "$KUBECTL" config --kubeconfig="$file" set-cluster e2e --server="https://127.0.0.1:$DK_API_PORT" \
    --certificate-authority="$PKI/ca.crt" --embed-certs >/dev/null
  "$KUBECTL" config --kubeconfig="$file" set-credentials "$cert" --client-certificate="$PKI/$cert.crt" \
    --client-key="$PKI/$cert.key" --embed-certs >/dev/null
  "$KUBECTL" config --kubeconfig="$file" set-context e2e --cluster=e2e --user="$cert" >/dev/null
  "$KUBECTL" config --kubeconfig="$file" use-context e2e >/dev/null
}
kubeconfig admin admin
kubeconfig kube-controller-manager kube-controller-manager
kubeconfig kube-scheduler kube-scheduler
kubeconfig kubelet kubelet-client
cp "$DK_STATE/kubeconfig/admin.kubeconfig" "$DK_KUBECONFIG"

# ---------------------------------------------------------------------------------------------- pod network
# The bridge exists before any pod so host-side test servers can bind to its address early. The marker is
# written before the bridge so an interrupted run still lets cluster-down.sh remove it.
if ! ip link show "$DK_BRIDGE" >/dev/null 2>&1; then
  touch "$DK_RUN/bridge.created"
  ip link add "$DK_BRIDGE" type bridge
elif [[ ! -f $DK_RUN/bridge.created ]]; then
  dk_die "a bridge $DK_BRIDGE exists that this cluster did not create; set DELTAKEEPER_CLUSTER_BRIDGE to another name"
fi
ip addr replace "$DK_BRIDGE_IP/24" dev "$DK_BRIDGE"
ip link set "$DK_BRIDGE" up
# A DNAT to 127.0.0.1 from a non-loopback interface needs route_localnet, here only on our bridge (it goes
# away with the bridge).
echo 1 >"/proc/sys/net/ipv4/conf/$DK_BRIDGE/route_localnet"

# Pods find the API server at the in-cluster address $DK_SERVICE_IP:443 (what rest.InClusterConfig reads
# from KUBERNETES_SERVICE_HOST/PORT) and at the advertised endpoint $DK_BRIDGE_IP:$DK_API_PORT. The OUTPUT
# jump makes the service address work for host processes too, and keeps any such traffic on this machine.
iptables -t nat -N "$DK_NAT_CHAIN" 2>/dev/null || iptables -t nat -F "$DK_NAT_CHAIN"
iptables -t nat -A "$DK_NAT_CHAIN" -d "$DK_SERVICE_IP/32" -p tcp --dport 443 -j DNAT --to-destination "127.0.0.1:$DK_API_PORT"
iptables -t nat -A "$DK_NAT_CHAIN" -d "$DK_BRIDGE_IP/32" -p tcp --dport "$DK_API_PORT" -j DNAT --to-destination "127.0.0.1:$DK_API_PORT"
iptables -t nat -C PREROUTING -i "$DK_BRIDGE" -j "$DK_NAT_CHAIN" 2>/dev/null ||
  iptables -t nat -A PREROUTING -i "$DK_BRIDGE" -j "$DK_NAT_CHAIN"
iptables -t nat -C OUTPUT -d "$DK_SERVICE_IP/32" -j "$DK_NAT_CHAIN" 2>/dev/null ||
  iptables -t nat -A OUTPUT -d "$DK_SERVICE_IP/32" -j "$DK_NAT_CHAIN"
# Pods may talk to each other and to this host, never beyond it: the bridge has no masquerading, and this
# drop holds even on a host with IP forwarding on.
iptables -t filter -N "$DK_FILTER_CHAIN" 2>/dev/null || iptables -t filter -F "$DK_FILTER_CHAIN"
iptables -t filter -A "$DK_FILTER_CHAIN" -i "$DK_BRIDGE" ! -o "$DK_BRIDGE" -j DROP
iptables -t filter -A "$DK_FILTER_CHAIN" -o "$DK_BRIDGE" ! -i "$DK_BRIDGE" -j DROP
iptables -t filter -C FORWARD -j "$DK_FILTER_CHAIN" 2>/dev/null || iptables -t filter -I FORWARD -j "$DK_FILTER_CHAIN"

# isGateway stays false: the bridge plugin would otherwise turn on net.ipv4.ip_forward for the whole host.
cat >"$DK_STATE/cni/net.d/10-$DK_CNI_NETWORK.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$DK_CNI_NETWORK",
  "plugins": [{
    "type": "bridge",
    "bridge": "$DK_BRIDGE",
    "isGateway": false,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "dataDir": "$DK_STATE/cni/ipam",
      "ranges": [[{"subnet": "$DK_POD_SUBNET", "rangeStart": "$DK_POD_PREFIX.10", "gateway": "$DK_BRIDGE_IP"}]],
      "routes": [{"dst": "0.0.0.0/0", "gw": "$DK_BRIDGE_IP"}]
    }
  }]
}
EOF

# ------------------------------------------------------------------------------------------------ containerd
# A private containerd (own socket, root and state) so the host's containerd, if any, is never touched.
CTR=$DK_STATE/containerd
cat >"$CTR/config.toml" <<EOF
version = 2
root = "$CTR/root"
state = "$CTR/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "$DK_CTR_SOCK"

[plugins."io.containerd.internal.v1.opt"]
  path = "$CTR/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$DK_PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  netns_mounts_under_state_dir = true
  # Some VMs (this project's CI among them) drop CAP_SYS_RESOURCE from root's bounding set, so no process may
  # lower its oom_score_adj; runc would then fail every pod sandbox (the kubelet asks for -998) with
  # "failed to update /proc/self/oom_score_adj: permission denied". Clamping to containerd's own value avoids it.
  restrict_oom_score_adj = true

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # The kubelet uses the cgroupfs driver (below): runtime and kubelet must agree.
        SystemdCgroup = false
        Root = "$CTR/runc"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$DK_STATE/cni/net.d"
    max_conf_num = 1
EOF
dk_start containerd containerd --config "$CTR/config.toml"

# ------------------------------------------------------------------------------------------------------ etcd
dk_start etcd "$K8S_BIN/etcd" --name e2e --data-dir "$DK_STATE/etcd" \
  --listen-client-urls "http://127.0.0.1:$DK_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$DK_ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$DK_ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$DK_ETCD_PEER_PORT" \
  --initial-cluster "e2e=http://127.0.0.1:$DK_ETCD_PEER_PORT" \
  --listen-metrics-urls "" --unsafe-no-fsync --quota-backend-bytes 2147483648 --log-level warn

# wait_until NAME SECONDS DESCRIPTION CMD...: poll CMD; fail with NAME's log if it dies or time runs out.
wait_until() {
  local name=$1 seconds=$2 what=$3 deadline
  shift 3
  deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ! dk_pid "$name" >/dev/null; then dk_tail "$name"; dk_die "$name exited while waiting for $what"; fi
    if ((SECONDS > deadline)); then dk_tail "$name"; dk_die "timed out after ${seconds}s waiting for $what"; fi
    sleep 0.25
  done
  dk_log "$what: ok"
}

# -------------------------------------------------------------------------------- pause image (pod sandbox)
# No registry is reachable: build the sandbox image from hack/pause and import it before the kubelet asks.
wait_until containerd 30 "containerd socket" ctr -a "$DK_CTR_SOCK" version
if ! ctr -a "$DK_CTR_SOCK" -n k8s.io images ls -q | grep -qx "$DK_PAUSE_IMAGE"; then
  (cd "$DK_ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$DK_STATE/images/pause" ./hack/pause)
  (cd "$DK_ROOT" && go run ./hack/imagetar -o "$DK_STATE/images/pause.tar" -ref "$DK_PAUSE_IMAGE" \
    -add "$DK_STATE/images/pause:/pause:0755" -entrypoint /pause -user 65535:65535) >/dev/null
  "$DK_ROOT/hack/cluster-load-image.sh" "$DK_PAUSE_IMAGE" "$DK_STATE/images/pause.tar"
fi

# ------------------------------------------------------------------------------------------- control plane
wait_until etcd 30 "etcd health" curl -sf "http://127.0.0.1:$DK_ETCD_PORT/health"
dk_start kube-apiserver "$K8S_BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$DK_ETCD_PORT" \
  --bind-address=127.0.0.1 --secure-port="$DK_API_PORT" --advertise-address="$DK_BRIDGE_IP" \
  --service-cluster-ip-range="$DK_SERVICE_CIDR" \
  --tls-cert-file="$PKI/kube-apiserver.crt" --tls-private-key-file="$PKI/kube-apiserver.key" \
  --client-ca-file="$PKI/ca.crt" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$PKI/service-account.pub" --service-account-signing-key-file="$PKI/service-account.key" \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP \
  --cert-dir="$DK_STATE/pki/kube-apiserver-generated" --profiling=false --event-ttl=1h
wait_until kube-apiserver 120 "kube-apiserver /readyz" \
  curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "https://127.0.0.1:$DK_API_PORT/readyz"

dk_start kube-controller-manager "$K8S_BIN/kube-controller-manager" \
  --kubeconfig="$DK_STATE/kubeconfig/kube-controller-manager.kubeconfig" \
  --authentication-kubeconfig="$DK_STATE/kubeconfig/kube-controller-manager.kubeconfig" \
  --authorization-kubeconfig="$DK_STATE/kubeconfig/kube-controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$DK_KCM_PORT" --cert-dir="$DK_STATE/pki/kcm-generated" \
  --service-account-private-key-file="$PKI/service-account.key" --root-ca-file="$PKI/ca.crt" \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
  --use-service-account-credentials --leader-elect=false \
  --cluster-name=deltakeeper-e2e --service-cluster-ip-range="$DK_SERVICE_CIDR" --profiling=false
dk_start kube-scheduler "$K8S_BIN/kube-scheduler" \
  --kubeconfig="$DK_STATE/kubeconfig/kube-scheduler.kubeconfig" \
  --authentication-kubeconfig="$DK_STATE/kubeconfig/kube-scheduler.kubeconfig" \
  --authorization-kubeconfig="$DK_STATE/kubeconfig/kube-scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$DK_SCHEDULER_PORT" --cert-dir="$DK_STATE/pki/scheduler-generated" \
  --leader-elect=false --profiling=false

# -------------------------------------------------------------------------------------------------- kubelet
cat >"$DK_STATE/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# Kubernetes 1.35+ refuses cgroup v1 hosts unless told otherwise; CI machines still run cgroup v1.
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://$DK_CTR_SOCK
address: 127.0.0.1
port: $DK_KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $DK_KUBELET_HEALTHZ_PORT
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization:
  mode: Webhook
podLogsDir: $DK_STATE/kubelet/pods-logs
# No DNS for pods: nothing in the tests needs names, and an empty resolver keeps pods from sending queries to
# the host's name servers.
resolvConf: ""
# Locally imported images cannot be pulled again: never garbage-collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# Do not evict test pods on a busy CI disk.
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
serializeImagePulls: false
maxPods: 40
EOF
dk_start kubelet "$K8S_BIN/kubelet" --config="$DK_STATE/kubelet/config.yaml" \
  --kubeconfig="$DK_STATE/kubeconfig/kubelet.kubeconfig" --root-dir="$DK_STATE/kubelet/root" \
  --cert-dir="$DK_STATE/kubelet/pki" --hostname-override="$DK_NODE"

node_ready() {
  [[ $("$KUBECTL" --kubeconfig "$DK_KUBECONFIG" get node "$DK_NODE" \
    -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}
# The kubelet's own health first: after a restart the Node object may still say Ready from the last run.
wait_until kubelet "$TIMEOUT" "kubelet /healthz" curl -sf "http://127.0.0.1:$DK_KUBELET_HEALTHZ_PORT/healthz"
wait_until kubelet "$TIMEOUT" "node $DK_NODE Ready" node_ready
# Pods in new namespaces need the ServiceAccount and root CA that the controller-manager hands out.
wait_until kube-controller-manager 60 "default ServiceAccount" \
  "$KUBECTL" --kubeconfig "$DK_KUBECONFIG" -n default get serviceaccount default
wait_until kube-controller-manager 60 "kube-root-ca.crt ConfigMap" \
  "$KUBECTL" --kubeconfig "$DK_KUBECONFIG" -n default get configmap kube-root-ca.crt

cat >"$DK_DIR/env" <<EOF
# Source this file: the running e2e cluster (written by hack/cluster-up.sh).
export KUBECONFIG=$DK_KUBECONFIG
export DELTAKEEPER_CLUSTER_DIR=$DK_DIR
export DELTAKEEPER_CLUSTER_BRIDGE_IP=$DK_BRIDGE_IP
export DELTAKEEPER_CLUSTER_CONTAINERD=$DK_CTR_SOCK
export DELTAKEEPER_CLUSTER_KUBECTL=$KUBECTL
EOF
dk_log "cluster ready in ${SECONDS}s: export KUBECONFIG=$DK_KUBECONFIG (or: source $DK_DIR/env)"
