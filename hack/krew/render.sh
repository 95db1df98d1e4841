#!/usr/bin/env bash
# Renders hack/krew/deltakeeper.yaml for a release: hack/krew/render.sh v0.4.0 dist/ > deltakeeper.yaml
# fills in the version and the sha256 of each dist/deltakeeper_<version>_<os>_<arch>.tar.gz; a missing
# archive is an error, so a manifest never points at something that was not built.
set -euo pipefail
version=${1:?usage: render.sh VERSION DIST_DIR}
dist=${2:?usage: render.sh VERSION DIST_DIR}
manifest=$(cat "$(dirname "$0")/deltakeeper.yaml")
manifest=${manifest//\{\{VERSION\}\}/$version}
for platform in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64; do
  archive="$dist/deltakeeper_${version}_${platform}.tar.gz"
  [[ -f $archive ]] || { echo "render.sh: $archive is missing" >&2; exit 1; }
  sum=$(sha256sum "$archive" | cut -d' ' -f1)
  manifest=${manifest//\{\{SHA256_${platform}\}\}/$sum}
done
printf '%s\n' "$manifest"
