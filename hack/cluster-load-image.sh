#!/usr/bin/env bash
# cluster-load-image.sh REF TARBALL - import an image tarball (docker-archive or OCI, e.g. from
# hack/build-image.sh) into the e2e cluster's containerd, in the k8s.io namespace the kubelet uses, and check
# that REF is there afterwards. Pods then use `image: REF` with `imagePullPolicy: Never`.
set -euo pipefail
DK_SCRIPT=cluster-load-image
# shellcheck source=hack/cluster-lib.sh
source "$(dirname "$0")/cluster-lib.sh"

[[ $# -eq 2 ]] || { echo "usage: $0 REF TARBALL" >&2; exit 2; }
ref=$1 tarball=$2
[[ -f $tarball ]] || dk_die "no such tarball: $tarball"
if [[ ! -S $DK_CTR_SOCK ]] || ! dk_pid containerd >/dev/null; then
  dk_die "the cluster's containerd is not running: run hack/cluster-up.sh"
fi

# containerd stores short names fully qualified, as the kubelet asks for them.
full=$ref
first=${ref%%/*}
if [[ $ref != */* ]]; then
  full=docker.io/library/$ref
elif [[ $first != *.* && $first != *:* && $first != localhost ]]; then
  full=docker.io/$ref
fi

# Right after containerd starts, an import can report success without the image being listed yet (seen about
# once in four fresh clusters): verify, and import again a few times before giving up.
out=
for attempt in 1 2 3 4 5; do
  out=$(ctr -a "$DK_CTR_SOCK" -n k8s.io images import "$tarball" 2>&1) || true
  if ctr -a "$DK_CTR_SOCK" -n k8s.io images ls -q | grep -qxF "$full"; then
    dk_log "imported $full"
    exit 0
  fi
  sleep "$attempt"
done
dk_die "$tarball did not provide $full after 5 imports (last ctr output: $out; tags in it: $(tar -xOf "$tarball" manifest.json 2>/dev/null || echo '?'))"
