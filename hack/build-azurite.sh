#!/usr/bin/env bash
# Installs Azurite, Microsoft's Azure Storage emulator (Blob, plus Queue and Table we do not use), from npm
# for the storage tests' Azure backend, and prints the path of its blob server's launcher.
#
#   hack/build-azurite.sh        -> bin/azurite/<version>/node_modules/.bin/azurite-blob
#
# The version is pinned here (AZURITE_VERSION) and recorded in a stamp file; a warm run returns at once.
# Node.js and npm come from Debian when missing (as hack/install-host-deps.sh installs host packages).
# AZURITE_BIN_DIR overrides the install directory.
set -euo pipefail
AZURITE_VERSION=3.37.0
root=$(cd "$(dirname "$0")/.." && pwd)
out=${AZURITE_BIN_DIR:-$root/bin/azurite/$AZURITE_VERSION}
bin=$out/node_modules/.bin/azurite-blob

if [[ -x $bin && -f $out/.azurite.stamp && $(cat "$out/.azurite.stamp") == "$AZURITE_VERSION" ]]; then
  echo "$bin"
  exit 0
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [[ $(id -u) != 0 ]]; then
    echo "build-azurite.sh: node and npm are missing; run as root (or: sudo apt-get install nodejs npm)" >&2
    exit 1
  fi
  echo "build-azurite.sh: installing nodejs and npm from Debian" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

start=$(date +%s)
echo "build-azurite.sh: installing azurite@$AZURITE_VERSION with npm ..." >&2
mkdir -p "$out"
# --prefix keeps it out of the global node_modules; --no-save and no package.json of ours: the version
# pin above is the only one.
npm install --prefix "$out" --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION" >&2
if [[ ! -x $bin ]]; then
  echo "build-azurite.sh: npm finished but $bin is missing" >&2
  exit 1
fi
echo "$AZURITE_VERSION" >"$out/.azurite.stamp"
echo "build-azurite.sh: installed azurite in $(( $(date +%s) - start ))s" >&2
echo "$bin"
