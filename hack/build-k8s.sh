#!/usr/bin/env bash
# build-k8s.sh [COMPONENT...] - build Kubernetes and etcd binaries from the Go module proxy (no binary
# downloads work on our CI machines) into bin/k8s/<version>/ and print that folder.
#
#   hack/build-k8s.sh                       kube-apiserver, etcd, kubectl (envtest: KUBEBUILDER_ASSETS)
#   hack/build-k8s.sh all                   also kube-controller-manager, kube-scheduler, kubelet (e2e cluster)
#
# The wrapper module hack/k8s pins k8s.io/kubernetes and re-pins its staging modules (see its go.mod).
# A binary is rebuilt only when missing or when hack/k8s/go.sum changed; a cold build of apiserver+etcd
# takes about 10 minutes on 2 cores, the rest about 5 more; a warm run returns immediately.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
K8S_VERSION=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$root/hack/k8s/go.mod")
out=${K8S_BIN_DIR:-$root/bin/k8s/$K8S_VERSION}
stamp=$(sha256sum "$root/hack/k8s/go.sum" | cut -c1-16)
mkdir -p "$out"

components=(kube-apiserver etcd kubectl)
if [[ ${1:-} == all ]]; then
  components+=(kube-controller-manager kube-scheduler kubelet)
elif [[ $# -gt 0 ]]; then
  components=("$@")
fi

minor=$(echo "$K8S_VERSION" | cut -d. -f2)
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
for c in "${components[@]}"; do
  if [[ -x $out/$c && -f $out/.$c.stamp && $(cat "$out/.$c.stamp") == "$stamp" ]]; then
    continue
  fi
  case $c in
    etcd) pkg=go.etcd.io/etcd/server/v3 ;;
    kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kubectl) pkg=k8s.io/kubernetes/cmd/$c ;;
    *) echo "build-k8s.sh: unknown component $c" >&2; exit 2 ;;
  esac
  start=$(date +%s)
  echo "build-k8s.sh: building $c ($K8S_VERSION) ..." >&2
  (cd "$root/hack/k8s" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "$ldflags" -o "$out/$c.tmp" "$pkg")
  mv "$out/$c.tmp" "$out/$c"
  echo "$stamp" >"$out/.$c.stamp"
  echo "build-k8s.sh: built $c in $(( $(date +%s) - start ))s" >&2
done
echo "$out"
