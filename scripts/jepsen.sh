#!/usr/bin/env bash
# Runs the raftns fault suite (tests/jepsen) as root: builds raftns if needed, then one seeded run
# in network namespaces; exit status is the checker's (0 valid, 1 invalid, 2 unknown).
# Usage: scripts/jepsen.sh [--nodes 3|5] [--time SECONDS] [--nemesis all|kill,pause,partition,member,clock]
#                          [--seed N] [--bin PATH] [--broken] [--workloads LIST] [--quiet S]
# --broken builds with -DRAFTNS_BREAK=ON into build-broken (a follower acknowledges writes before
# they commit) and runs against it: the suite is expected to FAIL.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
nodes=3 time=120 nemesis=all seed="" bin="" broken=0 extra=()
while [ $# -gt 0 ]; do
    case $1 in
        --nodes) nodes=$2; shift 2 ;;
        --time) time=$2; shift 2 ;;
        --nemesis) nemesis=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --broken) broken=1; shift ;;
        --workloads|--quiet|--warmup|--out) extra+=("$1" "$2"); shift 2 ;;
        -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
        *) echo "jepsen.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ "$(id -u)" != 0 ]; then
    echo "jepsen.sh: must run as root (network namespaces, iptables)" >&2
    exit 77
fi
build() {
    local dir=$1
    shift
    cmake -S "$top" -B "$top/$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
    cmake --build "$top/$dir" -j"$(nproc)" --target raftns raftnsctl >/dev/null
}
if [ "$broken" = 1 ]; then
    build build-broken -DRAFTNS_BREAK=ON
    bin=$top/build-broken/raftns
elif [ -z "$bin" ]; then
    build build-jepsen
    bin=$top/build-jepsen/raftns
fi
args=(--bin "$bin" --nodes "$nodes" --time "$time" --nemesis "$nemesis")
[ -n "$seed" ] && args+=(--seed "$seed")
exec python3 "$top/tests/jepsen/runner.py" "${args[@]}" "${extra[@]}"
