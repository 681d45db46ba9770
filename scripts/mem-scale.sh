#!/bin/sh
# Memory of one raftns node at a stock-shaped scale: B brokers register T topics each, every
# broker in one whole body (what a stock broker sends, no --split), then every route is read
# once (raftns-bench reads the T topics in turn). Prints the server's VmRSS/VmHWM after the
# registrations and after the reads (raftns-bench --pid, while it still holds the brokers'
# connections) and the route cache's /metrics lines.
# usage: scripts/mem-scale.sh BROKERS TOPICS [BUILD_DIR [raftns args...]]
#   env: DEPTH (1), CONNS (1), POOL (T: distinct topics, each broker registers T of them),
#        READS (POOL), BENCH_ARGS (extra raftns-bench arguments)
set -eu
B=$1; T=$2; BUILD=${3:-build}; shift 2; [ $# -gt 0 ] && shift
DIR=$(mktemp -d /tmp/raftns-mem-XXXXXX)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
C=$(port); R=$(port); H=$(port)
"$BUILD/raftns" --id 1 --data-dir "$DIR/d" --client-addr 127.0.0.1:$C --raft-addr 127.0.0.1:$R \
    --http-addr 127.0.0.1:$H --log-level warn "$@" >"$DIR/log" 2>&1 &
PID=$!
BPID=
trap '[ -n "$BPID" ] && kill $BPID 2>/dev/null; kill $PID 2>/dev/null; wait 2>/dev/null; rm -rf "$DIR"' EXIT
i=0; until python3 -c "import socket; socket.create_connection(('127.0.0.1',$C),0.2)" 2>/dev/null; do
    i=$((i+1)); [ $i -lt 100 ] || { cat "$DIR/log"; exit 1; }; sleep 0.1; done
"$BUILD/raftns-bench" -a 127.0.0.1:$C -c "${CONNS:-1}" -d "${DEPTH:-1}" --mix route=100 \
    --count "${READS:-${POOL:-$T}}" --brokers "$B" --topics "$T" --topic-pool "${POOL:-$T}" \
    --setup-conns 4 \
    --pid $PID --grace 60 --hold 600 --json --label "mem $B x $T" ${BENCH_ARGS:-} \
    >"$DIR/out.json" 2>"$DIR/bench.err" &
BPID=$!
python3 - "$DIR/out.json" "$PID" "$H" "$DIR/bench.err" <<'PY'
import json, sys, time, urllib.request
deadline = time.monotonic() + 900
line = ""
while not line and time.monotonic() < deadline:
    try:
        line = open(sys.argv[1]).readline()
    except OSError:
        pass
    time.sleep(0.2)
r = json.loads(line)
m = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[3], timeout=5).read().decode()
cache = {l.split()[0][len("raftns_"):]: float(l.split()[1]) for l in m.splitlines()
         if l.startswith("raftns_route_cache") or l.startswith("raftns_raft_log")}
sys.stderr.write(open(sys.argv[4]).read())
print(json.dumps({"setup_s": r["setup"]["seconds"], "setup_errors": r["setup"]["errors"],
                  "rss_after_setup_mib": round(r["setup"]["rss_kb"] / 1024, 1),
                  "reads": r.get("ok"), "req_s": r.get("throughput"), "errors": r.get("errors"),
                  "rss_after_reads_mib": round(r["server_rss_kb"] / 1024, 1),
                  "hwm_mib": round(r["server_hwm_kb"] / 1024, 1),
                  "reply_bytes": r.get("bytes_in"), "cache": cache}))
PY
