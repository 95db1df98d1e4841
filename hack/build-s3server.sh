#!/usr/bin/env bash
# Builds the S3-compatible test server (rclone "serve s3", local backend only) that the storage tests
# and e2e runs start with internal/testutil/s3server, and prints the path of the binary.
#
#   hack/build-s3server.sh        -> bin/s3server/<rclone version>/s3server
#
# The wrapper module hack/s3server pins rclone (see its go.mod). The binary is rebuilt only when missing
# or when hack/s3server/go.sum or main.go changed (stamp file); a cold build takes about half a minute on
# 2 cores, a warm run returns immediately. S3SERVER_BIN_DIR overrides the output directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mod=$root/hack/s3server
RCLONE_VERSION=$(awk '$1=="require"{$1=""; $0=$0} $1=="github.com/rclone/rclone"{print $2; exit}' "$mod/go.mod")
out=${S3SERVER_BIN_DIR:-$root/bin/s3server/$RCLONE_VERSION}
stamp=$(cat "$mod/go.sum" "$mod/main.go" | sha256sum | cut -c1-16)
mkdir -p "$out"

if [[ -x $out/s3server && -f $out/.s3server.stamp && $(cat "$out/.s3server.stamp") == "$stamp" ]]; then
  echo "$out/s3server"
  exit 0
fi

start=$(date +%s)
echo "build-s3server.sh: building s3server (rclone $RCLONE_VERSION) ..." >&2
# -mod=mod lets a fresh checkout fetch the pinned modules; go.sum (committed) verifies them.
(cd "$mod" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "-s -w" -o "$out/s3server.tmp" .)
mv "$out/s3server.tmp" "$out/s3server"
echo "$stamp" >"$out/.s3server.stamp"
echo "build-s3server.sh: built s3server in $(( $(date +%s) - start ))s" >&2
echo "$out/s3server"
