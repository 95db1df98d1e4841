#!/usr/bin/env bash
# install-host-deps.sh - the Debian packages the real single-node cluster needs (containerd, runc, the CNI
# plugins, iptables) and prometheus, whose promtool checks the alerts (make test) and whose server scrapes the
# cluster's manager in the e2e monitoring phase (it is installed, not started: Debian would start a service
# only under systemd). Go, make, gcc, git, curl and openssl come with the machine image. Installs only what is
# missing; a no-op on a prepared machine.
set -euo pipefail
need=()
for pkg in containerd runc containernetworking-plugins iptables prometheus; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
((${#need[@]})) || exit 0
if [[ $(id -u) != 0 ]]; then
  echo "install-host-deps.sh: missing ${need[*]}; run as root (or: sudo apt-get install ${need[*]})" >&2
  exit 1
fi
echo "install-host-deps.sh: installing ${need[*]} from Debian" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
