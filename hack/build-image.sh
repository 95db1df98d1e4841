#!/usr/bin/env bash
# build-image.sh REF [TARBALL] - build bin/deltakeeper (static, version-stamped by `make build`) and pack it as
# a container image without Docker: a distroless-like root filesystem (the binary at /usr/local/bin/deltakeeper,
# /etc/passwd and /etc/group with nonroot 65532, /tmp, the host's CA certificates), entrypoint
# /usr/local/bin/deltakeeper, user 65532:65532, written as a reproducible docker-archive by hack/imagetar.
# Prints the tarball's path (default bin/images/<REF with / and : as _>.tar).
#
#   hack/build-image.sh deltakeeper.local/deltakeeper:e2e
#   hack/cluster-load-image.sh deltakeeper.local/deltakeeper:e2e bin/images/deltakeeper.local_deltakeeper_e2e.tar
#
# It is the Dockerfile's image, minus Docker: the same binary, path, user and entrypoint.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 REF [TARBALL]" >&2; exit 2; }
ref=$1
tarball=${2:-bin/images/$(echo "$ref" | tr '/:@' '___').tar}
ca=/etc/ssl/certs/ca-certificates.crt
[[ -f $ca ]] || { echo "build-image.sh: $ca is missing: apt-get install ca-certificates" >&2; exit 1; }

# make build is the one place that knows how the binary is stamped and linked.
make --no-print-directory build >&2
mkdir -p "$(dirname "$tarball")"
go run ./hack/imagetar -o "$tarball" -ref "$ref" \
  -add bin/deltakeeper:/usr/local/bin/deltakeeper:0755 -entrypoint /usr/local/bin/deltakeeper \
  -user 65532:65532 -ca "$ca" >&2
echo "$tarball"
