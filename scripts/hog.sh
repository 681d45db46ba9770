#!/usr/bin/env bash
# Runs a command while an unrelated CPU hog keeps every core busy: N python3 busy loops at
# normal priority (N = nproc unless -n says), started before the command and killed by PID
# when it ends, however it ends (trap). The command's deadlines are scaled by
# RAFTNS_TEST_SCALE=2 unless the caller set it (docs/testing.md). It is a load generator for
# the timing of the tests, not a benchmark: it measures only how much CPU the hog got.
# Usage: scripts/hog.sh [-n N] command [args...]   (exit status: the command's)
set -euo pipefail

n=$(nproc)
if [ "${1:-}" = -n ]; then
    n=$2
    shift 2
fi
if [ $# -eq 0 ]; then
    echo "usage: scripts/hog.sh [-n N] command [args...]" >&2
    exit 2
fi

hog_pids=()
hog_t0=$(date +%s)

# CPU clock ticks (user + system) one hog process ran, from /proc (0 when it is gone).
hog_cpu_ticks() {
    local stat f
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
    # Fields after the ")" that closes the command name: utime is the 12th, stime the 13th.
    read -ra f <<<"${stat##*) }"
    echo $((f[11] + f[12]))
}

hog_stop() {
    local p ticks=0 wall cpu
    trap - EXIT INT TERM
    [ ${#hog_pids[@]} -gt 0 ] || return 0
    for p in "${hog_pids[@]}"; do
        ticks=$((ticks + $(hog_cpu_ticks "$p")))
    done
    wall=$(($(date +%s) - hog_t0))
    cpu=$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t / hz }')
    for p in "${hog_pids[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "${hog_pids[@]}"; do
        wait "$p" 2>/dev/null || true
    done
    echo "== hog: killed pids ${hog_pids[*]}; they ran ${cpu} CPU-s in ${wall} s" \
        "(${n} busy loops on $(nproc) cores)"
    hog_pids=()
}
cmd_pid=
# A signal ends the command too (TERM: a non-interactive shell starts it with SIGINT ignored).
hog_signalled() {
    [ -z "$cmd_pid" ] || kill -TERM "$cmd_pid" 2>/dev/null || true
    hog_stop
    exit "$1"
}
trap 'hog_stop' EXIT
trap 'hog_signalled 130' INT
trap 'hog_signalled 143' TERM

for ((i = 0; i < n; i++)); do
    python3 -c 'while True: pass' &
    hog_pids+=($!)
done
export RAFTNS_TEST_SCALE=${RAFTNS_TEST_SCALE:-2}
echo "== hog: ${n} busy loops (pids ${hog_pids[*]}, nice $(nice)) while running: $*" \
    "(RAFTNS_TEST_SCALE=${RAFTNS_TEST_SCALE})"
# In the background, so that wait (unlike a foreground command) lets a trap run at once.
"$@" &
cmd_pid=$!
rc=0
wait "$cmd_pid" || rc=$?
cmd_pid=
hog_stop
exit "$rc"
