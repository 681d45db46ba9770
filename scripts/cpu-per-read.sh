#!/bin/sh
# Server CPU time (user + system, from /proc/PID/stat) per route read: one node with B brokers x
# T topics (held open), 20,000 warm-up reads, then COUNT reads at CONNS x DEPTH with
# raftns-bench. CPU time per read moves less with the machine's load than throughput does.
# usage: scripts/cpu-per-read.sh RAFTNS_BIN [CONNS DEPTH COUNT B T]   (16 16 300000 10 100)
set -eu
BIN=$1; C=${2:-16}; D=${3:-16}; COUNT=${4:-300000}; B=${5:-10}; T=${6:-100}
BENCH=$(dirname "$0")/../build/raftns-bench
DIR=$(mktemp -d /tmp/raftns-cpu-XXXXXX)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
P=$(port); R=$(port); H=$(port)
"$BIN" --id 1 --data-dir "$DIR/d" --client-addr 127.0.0.1:$P --raft-addr 127.0.0.1:$R \
    --http-addr 127.0.0.1:$H --log-level warn >"$DIR/log" 2>&1 &
PID=$!
HP=
trap '[ -n "$HP" ] && kill $HP 2>/dev/null; kill $PID 2>/dev/null; wait 2>/dev/null; rm -rf "$DIR"' EXIT
i=0; until python3 -c "import socket; socket.create_connection(('127.0.0.1',$P),0.2)" 2>/dev/null; do
    i=$((i+1)); [ $i -lt 200 ] || exit 1; sleep 0.05; done
"$BENCH" -a 127.0.0.1:$P -c 1 --mix cluster=100 --count 1 --brokers "$B" --topics "$T" \
    --topic-pool "$T" --hold 3600 --json >"$DIR/hold.json" 2>/dev/null &
HP=$!
i=0; until [ -s "$DIR/hold.json" ]; do i=$((i+1)); [ $i -lt 6000 ] || exit 1; sleep 0.05; done
"$BENCH" -a 127.0.0.1:$P -c "$C" -d "$D" --mix route=100 --no-setup --topic-pool "$T" \
    --count 20000 >/dev/null 2>&1
t0=$(awk '{print $14 + $15}' /proc/$PID/stat)
"$BENCH" -a 127.0.0.1:$P -c "$C" -d "$D" --mix route=100 --no-setup --topic-pool "$T" \
    --count "$COUNT" --json 2>/dev/null >"$DIR/r.json"
t1=$(awk '{print $14 + $15}' /proc/$PID/stat)
python3 -c "import json, os; r = json.loads(open('$DIR/r.json').readline()); \
print(json.dumps({'cpu_us_per_read': round(($t1 - $t0) * 1e6 / os.sysconf('SC_CLK_TCK') / r['ok'], 2), \
'rps': round(r['throughput']), 'ok': r['ok'], 'errors': r['errors']}))"
