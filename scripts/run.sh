#!/usr/bin/env bash
# Installs what running raftns needs (scripts/setup.sh: compiler, cmake, libuv, libraft, cJSON,
# zlib, OpenSSL; the test-only packages are `scripts/setup.sh --test`), builds raftns and
# raftnsctl, and runs the local three-node cluster of cluster-configs/local-3.json in the
# foreground: client ports 9876-9878, raft 9886-9888, http 9896-9898, state in
# ./raftns-data/local-3/<id> (never ./raftns-data/<id>, the data dir of `build/raftns` alone, the
# one-node default) and each node's log in ./raftns-data/local-3/<id>.log.
# It prints each node's state once the node is ready, and exits non-zero with the last lines of
# a node's log when that node fails to start or dies. Ctrl-C or SIGTERM stops all three (exit 0).
# Extra arguments go to every raftns process (for example --log-level debug).
# Environment: RAFTNS_RUN_CONFIG (another cluster file), RAFTNS_RUN_DATA (instead of
# ./raftns-data), RAFTNS_RUN_NO_BUILD=1 (use build/ as it is: no install, no build),
# RAFTNS_RUN_READY_S (how long the nodes may take to become ready, default 60),
# RAFTNS_RUN_BIN_DIR (where raftns is, default build; tests point it at the build under test).
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${RAFTNS_RUN_CONFIG:-cluster-configs/local-3.json}
DATA=${RAFTNS_RUN_DATA:-raftns-data}
READY_S=${RAFTNS_RUN_READY_S:-60}
BIN=${RAFTNS_RUN_BIN_DIR:-build}
name=$(basename "$CONFIG" .json)
dir=$DATA/$name
if [ -z "${RAFTNS_RUN_NO_BUILD:-}" ]; then
    scripts/setup.sh
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build -j"$(nproc)" --target raftns raftnsctl
fi
# The local files name "secretFile": ../raftns-data/local.secret. Made once, random, mode 0600.
if grep -q '"secretFile": *"../raftns-data/local.secret"' "$CONFIG"; then
    secret_file=raftns-data/local.secret
    if [ ! -s "$secret_file" ]; then
        mkdir -p raftns-data
        (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$secret_file")
        echo "raftns: generated the local cluster secret in $secret_file"
    fi
fi
# Data dirs of the scripts/run.sh before this one (./raftns-data/<id> for the 3-node cluster)
# would make `build/raftns` alone start on a 3-voter configuration: say so once.
for old in raftns-data/1 raftns-data/2 raftns-data/3; do
    if [ -d "$old" ] && [ -n "$(ls -A "$old" 2>/dev/null)" ] && [ "$DATA" = raftns-data ]; then
        echo "raftns: note: $old is left from an older scripts/run.sh (3-node data); it is not" \
            "used here, and \`build/raftns\` alone would start on it: remove it with" \
            "rm -rf raftns-data/[123]"
        break
    fi
done
# Validate the file (and the flags) before starting anything; also lists the nodes.
if ! nodes=$("$BIN/raftns" --check-config "$CONFIG" "$@"); then
    echo "raftns: $CONFIG is not usable (above); nothing started" >&2
    exit 2
fi
ids=() clients=() https=()
while read -r word id _raft raft _client client _http http; do
    [ "$word" = node ] || continue
    ids+=("$id")
    clients+=("$client")
    https+=("$http")
done <<<"$nodes"
mkdir -p "$dir"
pids=()
stopping=0
# Stops every node: SIGTERM, up to 30 s for a clean stop, then SIGKILL. A second Ctrl-C or
# SIGTERM while they stop changes nothing (the nodes are stopping already).
stop_all() {
    stopping=1
    trap '' INT TERM
    for pid in "${pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    local until=$((SECONDS + 30)) left
    while :; do
        left=()
        for pid in "${pids[@]}"; do
            if kill -0 "$pid" 2>/dev/null; then left+=("$pid"); fi
        done
        ((${#left[@]})) || break
        if ((SECONDS >= until)); then
            echo "raftns: ${left[*]} did not stop within 30 s: killing" >&2
            kill -KILL "${left[@]}" 2>/dev/null || true
            break
        fi
        sleep 0.1
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
}
on_signal() {
    echo "raftns: stopping ${pids[*]}"
    stop_all
    echo "raftns: all ${#ids[@]} nodes stopped"
    exit 0
}
# fail INDEX WHY: the node's last log lines, the others stopped, exit 1.
fail() {
    local k=$1 why=$2
    echo "raftns: node ${ids[$k]} $why; its last log lines ($dir/${ids[$k]}.log):" >&2
    tail -n 25 "$dir/${ids[$k]}.log" | sed 's/^/    /' >&2
    stop_all
    echo "raftns: stopped the other nodes" >&2
    exit 1
}
trap on_signal INT TERM
for k in "${!ids[@]}"; do
    id=${ids[$k]}
    "$BIN/raftns" --config "$CONFIG" --id "$id" --data-dir "$dir/$id" \
        --log-file "$dir/$id.log" "$@" &
    pids+=("$!")
done
echo "raftns: starting ${#ids[@]} nodes from $CONFIG (pids ${pids[*]}; data and logs in $dir)"

# http_get HOSTPORT PATH: the response (status line, headers, body) with bash's /dev/tcp.
http_get() {
    local host=${1%:*} port=${1##*:}
    exec 3<>"/dev/tcp/$host/$port" || return 1
    printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$2" "$1" >&3
    timeout 2 cat <&3 || true
    exec 3<&-
}
# field KEY: the first top-level-looking "KEY":value of the JSON on stdin.
field() { grep -o '"'"$1"'":[^,{}]*' | head -1 | cut -d: -f2- | tr -d '"'; }
ready=()
deadline=$((SECONDS + READY_S))
while :; do
    n_ready=0
    for k in "${!ids[@]}"; do
        if ! kill -0 "${pids[$k]}" 2>/dev/null; then
            wait "${pids[$k]}" && rc=0 || rc=$?
            fail "$k" "exited with status $rc before it was ready"
        fi
        if [ -n "${ready[$k]:-}" ]; then
            n_ready=$((n_ready + 1))
            continue
        fi
        [ "${https[$k]}" != - ] || { ready[$k]=1; continue; }
        if http_get "${https[$k]}" /healthz 2>/dev/null | head -1 | grep -q ' 200 '; then
            st=$(http_get "${https[$k]}" /status 2>/dev/null | tail -1)
            ready[$k]=1
            n_ready=$((n_ready + 1))
            echo "raftns: node ${ids[$k]} ready: $(field role <<<"$st"), term" \
                "$(field term <<<"$st"), applied $(field applied_index <<<"$st")," \
                "client ${clients[$k]}, http ${https[$k]}"
        fi
    done
    [ "$n_ready" -lt "${#ids[@]}" ] || break
    if ((SECONDS >= deadline)); then
        for k in "${!ids[@]}"; do
            if [ -z "${ready[$k]:-}" ]; then
                fail "$k" "is not ready after ${READY_S} s"
            fi
        done
    fi
    sleep 0.2
done
addrs=$(IFS=';'; echo "${clients[*]}")
cat <<MSG
raftns: all ${#ids[@]} nodes ready ($CONFIG; data and logs in $dir)
  brokers:   namesrvAddr=$addrs   (broker.conf)
  clients:   export NAMESRV_ADDR='$addrs'
  inspect:   build/raftnsctl -n ${clients[0]} status
             RAFTNS_SECRET=\$(cat raftns-data/local.secret) build/raftnsctl -n ${clients[0]} member list
             curl -s ${https[0]}/status;  tail -f $dir/*.log
  stop:      Ctrl-C (stops all ${#ids[@]})
MSG
# Wait until a node exits on its own (or a signal arrives: the trap stops the others).
set +e
wait -n "${pids[@]}"
status=$?
[ "$stopping" = 0 ] || exit 0
for k in "${!ids[@]}"; do
    if ! kill -0 "${pids[$k]}" 2>/dev/null; then
        fail "$k" "exited (status $status)"
    fi
done
stop_all
exit 1
