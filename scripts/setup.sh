#!/usr/bin/env bash
# Installs the Debian packages raftns needs. Idempotent: installs only what is missing, so a
# second run on a ready machine does nothing and needs no network.
#   scripts/setup.sh          what building and running raftns needs (scripts/run.sh)
#   scripts/setup.sh --test   that and what the tests, fuzzing, benchmarks and the fault suite
#                             need (scripts/test.sh): cmocka, clang, python3, node, faketime,
#                             gnuplot, redis, valgrind, lcov, systemd (systemd-analyze), groff, strace
set -euo pipefail

packages=(build-essential cmake pkg-config libuv1-dev libraft-dev libcjson-dev zlib1g-dev
          libssl-dev)
if [ "${1:-}" = --test ]; then
    packages+=(libcmocka-dev openssl clang libclang-rt-14-dev clang-format iproute2 iptables
               python3 nodejs npm faketime gnuplot-nox redis-server redis-tools procps psmisc
               valgrind lcov systemd groff-base git strace)
elif [ -n "${1:-}" ]; then
    echo "usage: scripts/setup.sh [--test]" >&2
    exit 2
fi

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
    # A fresh machine may still run its own apt for a while: wait for the locks (dpkg's with
    # apt's own timeout, the lists lock by retrying) instead of failing.
    deadline=$((SECONDS + 1200))
    until apt-get -o DPkg::Lock::Timeout=60 update -qq; do
        ((SECONDS < deadline)) || { echo "setup: apt-get update kept failing" >&2; exit 1; }
        echo "setup: apt is busy (locked?); retrying in 10 s"
        sleep 10
    done
    apt-get -o DPkg::Lock::Timeout=1200 install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "setup: libraft $(pkg-config --modversion raft) libuv $(pkg-config --modversion libuv)"
