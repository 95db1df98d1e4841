#!/usr/bin/env bash
# Builds the GCS emulator (github.com/fsouza/fake-gcs-server) that the storage tests start with
# internal/testutil/gcsserver, and prints the path of the binary.
#
#   hack/build-gcsserver.sh        -> bin/gcsserver/<fake-gcs-server version>/gcsserver
#
# The wrapper module hack/gcsserver pins the version (a `tool` line in its go.mod). The binary is rebuilt
# only when missing or when hack/gcsserver/go.mod or go.sum changed (stamp file); a cold build takes about
# a minute on 2 cores, a warm run returns immediately. GCSSERVER_BIN_DIR overrides the output directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mod=$root/hack/gcsserver
VERSION=$(awk '$1=="require"{$1=""; $0=$0} $1=="github.com/fsouza/fake-gcs-server"{print $2; exit}' "$mod/go.mod")
out=${GCSSERVER_BIN_DIR:-$root/bin/gcsserver/$VERSION}
stamp=$(cat "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -c1-16)
mkdir -p "$out"

if [[ -x $out/gcsserver && -f $out/.gcsserver.stamp && $(cat "$out/.gcsserver.stamp") == "$stamp" ]]; then
  echo "$out/gcsserver"
  exit 0
fi

start=$(date +%s)
echo "build-gcsserver.sh: building gcsserver (fake-gcs-server $VERSION) ..." >&2
# -mod=mod lets a fresh checkout fetch the pinned modules; go.sum (committed) verifies them.
(cd "$mod" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "-s -w" -o "$out/gcsserver.tmp" github.com/fsouza/fake-gcs-server)
mv "$out/gcsserver.tmp" "$out/gcsserver"
echo "$stamp" >"$out/.gcsserver.stamp"
echo "build-gcsserver.sh: built gcsserver in $(( $(date +%s) - start ))s" >&2
echo "$out/gcsserver"
