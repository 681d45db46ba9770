#!/usr/bin/env bash
# Installs the Debian packages raftns needs to build, test and fuzz. Idempotent: installs only
# what is missing, so a second run on a ready machine does nothing and needs no network.
set -euo pipefail

packages=(build-essential cmake pkg-config libuv1-dev libraft-dev libcjson-dev libcmocka-dev
          zlib1g-dev libssl-dev openssl clang libclang-rt-14-dev clang-format iproute2 iptables python3
          nodejs npm faketime gnuplot-nox redis-server redis-tools procps psmisc valgrind)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nodejs/npm may come from outside Debian on some machines: accept working binaries.
if command -v node >/dev/null && command -v npm >/dev/null; then
    filtered=()
    for p in "${missing[@]}"; do [[ $p == nodejs || $p == npm ]] || filtered+=("$p"); done
    missing=("${filtered[@]+"${filtered[@]}"}")
fi
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "setup: libraft $(pkg-config --modversion raft) libuv $(pkg-config --modversion libuv)"
