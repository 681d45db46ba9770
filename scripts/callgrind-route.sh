#!/usr/bin/env bash
# Instructions per route read (GET_ROUTEINFO_BY_TOPIC): one node under valgrind callgrind,
# driven by raftns-bench twice (COUNT_LO and COUNT_HI reads, 16 connections, 10 brokers x 100
# topics); the difference of conn.c:process's inclusive instructions divided by the difference
# of the counts removes the start-up and the registrations. Callgrind counts instructions,
# not time, so a busy machine does not change the figure.
# Usage: scripts/callgrind-route.sh [RAFTNS_BIN [RAFTNS_BENCH_BIN]]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/raftns}
bench=${2:-build/raftns-bench}
lo=${COUNT_LO:-10000}
hi=${COUNT_HI:-30000}
work=$(mktemp -d /tmp/raftns-callgrind.XXXXXX)
trap 'rm -rf "$work"' EXIT
run() { # count -> inclusive instructions of conn.c:process
    local count=$1 ports d=$work/$1
    mkdir -p "$d"
    read -r p1 p2 p3 < <(python3 -c 'import socket
s=[socket.socket() for _ in range(3)]
[x.bind(("127.0.0.1", 0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))')
    printf '{"secret":"0123456789abcdef0123456789abcdefXYZ","nodes":[{"id":1,"raft":"127.0.0.1:%s","client":"127.0.0.1:%s","http":"127.0.0.1:%s","bootstrap":true}]}\n' \
        "$p1" "$p2" "$p3" >"$d/c.json"
    valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" "$bin" --config "$d/c.json" \
        --id 1 --data-dir "$d/data" --log-level warn >"$d/log" 2>&1 &
    local vp=$!
    local deadline=$((SECONDS + 120))
    until python3 -c "import socket; socket.create_connection(('127.0.0.1', $p2), 0.2)" 2>/dev/null; do
        ((SECONDS < deadline)) || { kill "$vp"; echo "callgrind-route: no listener" >&2; exit 1; }
        sleep 0.2
    done
    "$bench" -a "127.0.0.1:$p2" -c 16 --count "$count" --brokers 10 --topics 100 \
        --topic-pool 100 --mix route=100 --grace 2 >"$d/bench.out" 2>&1
    kill -TERM "$vp"
    wait "$vp" || true
    callgrind_annotate --inclusive=yes "$d/cg.out" |
        awk '/conn\.c:process / && !seen {gsub(",", "", $1); print $1; seen = 1}'
}
a=$(run "$lo")
b=$(run "$hi")
python3 -c "print('route read: %.1f instructions per request (%s reads: %s, %s reads: %s)' % (($b - $a) / ($hi - $lo), $lo, $a, $hi, $b))"
