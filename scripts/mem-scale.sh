#!/bin/sh
# Memory of one raftns node at a stock-shaped scale: B brokers register T topics each in one
# whole body (what a stock broker sends, no --split), then every route is read once.
# Prints VmRSS/VmHWM after the registrations and after the reads (raftns-bench --pid).
# usage: scripts/mem-scale.sh BROKERS TOPICS [BUILD_DIR] [extra raftns args...]
set -eu
B=$1; T=$2; BUILD=${3:-build}; shift 3 2>/dev/null || shift $#
DIR=$(mktemp -d /tmp/raftns-mem-XXXXXX)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
C=$(port); R=$(port); H=$(port)
"$BUILD/raftns" --id 1 --data-dir "$DIR/d" --client-addr 127.0.0.1:$C --raft-addr 127.0.0.1:$R \
    --http-addr 127.0.0.1:$H --log-level warn "$@" >"$DIR/log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
i=0; until python3 -c "import socket; socket.create_connection(('127.0.0.1',$C),0.2)" 2>/dev/null; do
    i=$((i+1)); [ $i -lt 100 ] || { cat "$DIR/log"; exit 1; }; sleep 0.1; done
POOL=$T
"$BUILD/raftns-bench" -a 127.0.0.1:$C -c 1 --mix route=100 --count "$POOL" --brokers "$B" \
    --topics "$T" --topic-pool "$POOL" --setup-conns 4 --pid $PID --grace 60 --json \
    --label "mem $B x $T" >"$DIR/out.json"
python3 - "$DIR/out.json" "$PID" "$H" <<'PY'
import json, sys, urllib.request
r = json.loads(open(sys.argv[1]).read().splitlines()[0])
st = open("/proc/%s/status" % sys.argv[2]).read()
hwm = int(st.split("VmHWM:")[1].split()[0]); rss = int(st.split("VmRSS:")[1].split()[0])
m = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[3], timeout=5).read().decode()
cache = [l for l in m.splitlines() if "route_cache" in l and not l.startswith("#")]
print(json.dumps({"setup_s": r["setup"]["seconds"], "setup_errors": r["setup"]["errors"],
                  "rss_after_setup_mib": round(r["setup"]["rss_kb"] / 1024, 1),
                  "reads": r.get("requests"), "errors": r.get("errors"),
                  "rss_after_reads_mib": round(rss / 1024, 1), "hwm_mib": round(hwm / 1024, 1),
                  "cache_metrics": cache}))
PY
