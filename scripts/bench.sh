#!/usr/bin/env bash
# bench.sh: builds raftns (RelWithDebInfo), starts a local 1-node and a 3-node
# raftns cluster and a redis-server baseline on free ports, runs the issue-5
# scenarios with raftns-bench and redis-benchmark in the same run, and writes
# JSON + PNG results to bench/results/. Every process it starts is stopped by
# PID on exit. It measures; it does not judge (targets are in BENCHMARKS.md).
#
# Usage: scripts/bench.sh [SCENARIO...]   (default: all of route register
#   heartbeat cluster3 scale catchup failover; name some to run only those;
#   "tls" -- route reads plain vs TLS on one permissive node, interleaved --
#   "security" -- route reads plain / ACL / TLS against redis, replicated
#   writes of this build against BASE_RAFTNS=<older raftns>; SECURITY_PARTS=reads|writes
#   runs one half -- and "raft-tls" -- replicated registrations through the leader of a
#   plain and of a raftTls 3-node cluster, interleaved -- and "writes" -- issue 11's
#   replicated writes with default timing: one PUT_KV through leader and follower,
#   64-connection registrations through leader, follower and on one node, redis SET
#   alongside -- and "fairness" -- a round of sequential 322 keep-alives idle and under
#   pipelined route load (FAIR_BROKERS=300 FAIR_TOPICS=10000 FAIR_CONNS=16 FAIR_DEPTH=16)
#   -- run only when named)
#
# Environment knobs (the defaults took 7.3 min on 2 shared, loaded cores):
#   REPEATS=3          runs per point; medians are reported
#   DURATION=5         seconds per raftns-bench / redis-benchmark point
#   SCALE=1            SCALE=0 skips the scale and catchup scenarios
#   SCALE_TIMEOUT=300  seconds allowed for loading one scale state
#   CATCHUP_SHAPE=100k catch-up state of the new (4th) node: "100k" = 10
#                      brokers x 10,000 topics (100,000 topics), "300x10000"
#                      = 300 brokers x 10,000 topics (slower: ~2-3 min more)
#   FAILOVER_TRIALS=10 kill -9 trials (0 skips the failover scenario)
#   FAILOVER_TIMELINE=3 timeline trials (one line each in the failover plot)
#   BUILD_DIR=build-bench  OUT=bench/results
# Needs: cmake, a C compiler, libuv, raft (Debian), redis-server,
# redis-benchmark, gnuplot (gnuplot-nox), python3.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-bench}"
OUT="${OUT:-$ROOT/bench/results}"
cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j2 --target raftns raftns-bench raftnsctl >/dev/null
mkdir -p "$OUT"
export ROOT BUILD_DIR OUT
exec python3 - "$@" <<'PY'
import json, os, signal, socket, statistics, subprocess, sys, tempfile, time, shutil
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "process"))
import nsclient  # noqa: E402

ROOT, BUILD, OUT = os.environ["ROOT"], os.environ["BUILD_DIR"], os.environ["OUT"]
RAFTNS, BENCH = os.path.join(BUILD, "raftns"), os.path.join(BUILD, "raftns-bench")
CTL = os.path.join(BUILD, "raftnsctl")
REPEATS = int(os.environ.get("REPEATS", "3"))
DURATION = float(os.environ.get("DURATION", "5"))
SCALE = os.environ.get("SCALE", "1") != "0"
SCALE_TIMEOUT = float(os.environ.get("SCALE_TIMEOUT", "300"))
CATCHUP_SHAPE = os.environ.get("CATCHUP_SHAPE", "100k")
FAILOVER_TRIALS = int(os.environ.get("FAILOVER_TRIALS", "10"))
FAILOVER_TIMELINE = int(os.environ.get("FAILOVER_TIMELINE", "3"))
ONLY = set(sys.argv[1:])  # optional scenario names to run
PROCS, TMPDIRS = [], []
RESULTS = {"machine": {}, "runs": [], "scale": {}, "ratios": []}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def want(name):
    return not ONLY or name in ONLY


def free_ports(n):
    ss = [socket.socket() for _ in range(n)]
    for s in ss:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in ss]
    for s in ss:
        s.close()
    return ports


def cleanup():
    for p in PROCS:
        if p.poll() is None:
            p.kill()
            p.wait()
    for d in TMPDIRS:
        shutil.rmtree(d, ignore_errors=True)


def start(args, logpath):
    f = open(logpath, "ab")
    p = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT)
    PROCS.append(p)
    return p


def stop(p, sig=signal.SIGTERM, timeout=30):
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Cluster:
    """n raftns nodes from one cluster file (1 node = the single-node setup)."""

    def __init__(self, n, snapshot_threshold=4096, spare=0, namesrv=None, binary=None,
                 timing=True):
        self.binary = binary or RAFTNS
        self.dir = tempfile.mkdtemp(prefix="raftns-bench-")
        TMPDIRS.append(self.dir)
        self.nodes = []
        for i in range(n + spare):
            r, c, h = free_ports(3)
            self.nodes.append({"id": i + 1, "raft": "127.0.0.1:%d" % r,
                               "client": "127.0.0.1:%d" % c, "http": "127.0.0.1:%d" % h,
                               "bootstrap": i < n})
        self.cfg = os.path.join(self.dir, "cluster.json")
        with open(self.cfg, "w") as f:
            # every bench client connects from 127.0.0.1: lift the per-address cap (1000)
            # timing=False keeps the server's default election/heartbeat
            cfg = {"secret": "bench-cluster-secret-0123456789",
                   "snapshotThreshold": snapshot_threshold, "nodes": self.nodes,
                   "namesrv": dict({"clientMaxConnectionsPerIp": 10000}, **(namesrv or {}))}
            if timing:
                cfg.update({"electionTimeoutMs": 1000, "heartbeatMs": 100})
            json.dump(cfg, f)
        self.procs = {}
        for nd in self.nodes[:n]:
            self.start_node(nd["id"])

    def start_node(self, i, level="warn"):
        d = os.path.join(self.dir, "n%d" % i)
        os.makedirs(d, exist_ok=True)
        self.procs[i] = start([self.binary, "--config", self.cfg, "--id", str(i), "--data-dir", d,
                               "--log-level", level], self.log_path(i))
        return self.procs[i]

    def log_path(self, i):
        return os.path.join(self.dir, "n%d.log" % i)

    def status(self, i):
        import urllib.request
        with urllib.request.urlopen("http://%s/status" % self.nodes[i - 1]["http"],
                                    timeout=2) as r:
            return json.loads(r.read().decode())

    def client(self, i):
        return self.nodes[i - 1]["client"]

    def leader(self, timeout=30, write_probe=True):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for nd in self.nodes:
                try:
                    # signed for this build; raftnsSecret for builds before the signatures
                    secret = "bench-cluster-secret-0123456789"
                    r = nsclient.request_once(nd["client"], 9003, nsclient.sign_private(
                                              9003, {"raftnsSecret": secret}, b"", secret),
                                              timeout=1)
                    if r.code == 0:
                        lid = r.body_json().get("leader", 0)
                        if lid and not write_probe:
                            return lid
                        if lid:
                            # ready = a write goes through
                            rr = nsclient.request_once(self.client(lid), 100,
                                                       {"namespace": "bench", "key": "k",
                                                        "value": "v"}, timeout=2)
                            if rr.code == 0:
                                return lid
                except Exception:
                    pass
            time.sleep(0.2)
        raise RuntimeError("no leader within %ss (logs in %s)" % (timeout, self.dir))

    def close(self):
        for p in self.procs.values():
            stop(p)


def bench(addr, label, conns=16, depth=1, mix="route=100", pid=None, extra=(), timeout=None):
    args = [BENCH, "-a", addr, "-c", str(conns), "-d", str(depth), "--mix", mix, "--json",
            "--label", label] + list(extra)
    if "--count" not in extra:
        args += ["--duration", str(DURATION)]
    if pid:
        args += ["--pid", str(pid)]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout or DURATION + 120)
    try:
        return json.loads(p.stdout.decode().strip().splitlines()[0])
    except (IndexError, ValueError):
        log("bench failed:", p.stderr.decode()[-2000:])
        return None


def redis_get(port, conns, depth, n):
    p = subprocess.run(["redis-benchmark", "-p", str(port), "-c", str(conns), "-P", str(depth),
                        "-t", "get", "-n", str(n), "--csv"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, timeout=600)
    for line in p.stdout.decode().splitlines():
        cols = [c.strip('"') for c in line.split(",")]
        if cols and cols[0] == "GET":
            return {"rps": float(cols[1]), "avg_ms": float(cols[2]), "p50_ms": float(cols[4]),
                    "p95_ms": float(cols[5]), "p99_ms": float(cols[6]),
                    "max_ms": float(cols[7])}
    return None


def median_of(runs, key):
    vals = [key(r) for r in runs if r]
    return statistics.median(vals) if vals else None


def summarize(name, runs, extra=None):
    rec = {"scenario": name, "repeats": len(runs), "runs": runs,
           "throughput_median": median_of(runs, lambda r: r["throughput"]),
           "p50_us_median": median_of(runs, lambda r: r["latency"]["p50_us"]),
           "p90_us_median": median_of(runs, lambda r: r["latency"]["p90_us"]),
           "p99_us_median": median_of(runs, lambda r: r["latency"]["p99_us"]),
           "p999_us_median": median_of(runs, lambda r: r["latency"]["p999_us"]),
           "errors": [r["errors"] for r in runs if r],
           "client_cpu_s": [r["client_cpu_s"] for r in runs if r],
           "server_rss_kb": [r["server_rss_kb"] for r in runs if r]}
    rec.update(extra or {})
    RESULTS["runs"].append(rec)
    log("%-34s %10.0f req/s  p50 %7.1f us  p99 %8.1f us  p99.9 %8.1f us" % (
        name, rec["throughput_median"] or 0, rec["p50_us_median"] or 0,
        rec["p99_us_median"] or 0, rec["p999_us_median"] or 0))
    return rec


def machine():
    m = {"nproc": os.cpu_count(), "uname": " ".join(os.uname())}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    m["cpu"] = line.split(":", 1)[1].strip()
                    break
        m["loadavg_start"] = open("/proc/loadavg").read().strip()
        m["redis"] = subprocess.run(["redis-server", "--version"], stdout=subprocess.PIPE
                                    ).stdout.decode().strip()
    except OSError:
        pass
    return m


def route_shape(conns, depth):
    return ["--brokers", "10", "--topics", "100", "--topic-pool", "100"]


def run_route_and_redis(one, rport, pid):
    addr = one.client(1)
    points = [(1, 1), (16, 1), (64, 1), (256, 1), (1000, 1), (16, 16)]
    for conns, depth in points:
        name = "route c%d d%d" % (conns, depth)
        if not want("route"):
            continue
        ours, theirs = [], []
        for _ in range(REPEATS):
            ours.append(bench(addr, name, conns, depth, pid=pid,
                              extra=route_shape(conns, depth) + ["--setup-conns", "1"]))
            n = int(max(50000, (ours[-1] or {}).get("throughput", 50000) * DURATION))
            theirs.append(redis_get(rport, conns, depth, n))
        rec = summarize("1-node " + name, ours, {"conns": conns, "depth": depth})
        rrps = median_of(theirs, lambda r: r["rps"])
        ratio = {"conns": conns, "depth": depth, "raftns_rps": rec["throughput_median"],
                 "redis_rps": rrps, "redis_runs": theirs,
                 "redis_p50_ms": median_of(theirs, lambda r: r["p50_ms"]),
                 "redis_p99_ms": median_of(theirs, lambda r: r["p99_ms"]),
                 "ratio": (rec["throughput_median"] / rrps) if rrps and
                 rec["throughput_median"] else None}
        RESULTS["ratios"].append(ratio)
        log("   redis GET c%d P%d: %.0f req/s  -> raftns/redis = %s" % (
            conns, depth, rrps or 0, "%.2f" % ratio["ratio"] if ratio["ratio"] else "n/a"))


def run_writes(cl, tag, pid):
    addr = cl.client(cl.leader())
    for mix, conns in (("register=100", 1), ("register=100", 64), ("heartbeat=100", 16),
                       ("hb904=100", 16)):
        kind = mix.split("=")[0]
        if not want(kind if kind != "hb904" else "heartbeat"):
            continue
        name = "%s %s c%d" % (tag, kind, conns)
        runs = [bench(addr, name, conns, 1, mix=mix, pid=pid) for _ in range(REPEATS)]
        summarize(name, runs, {"conns": conns, "depth": 1})


def wait_topics(addr, n, timeout):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            r = nsclient.request_once(addr, 206, timeout=30)
            if r.code == 0 and len(r.body_json().get("topicList", [])) >= n:
                return time.monotonic() - t0
        except Exception:
            pass
        time.sleep(0.1)
    return None


def log_times(path, needle):
    """Wall-clock times (epoch s) of the log lines of path that contain needle."""
    import calendar
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if needle in line:
                    ts = line.split(" ", 1)[0]  # 2026-11-29T21:37:23.123Z
                    sec = calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S"))
                    out.append(sec + int(ts[20:23]) / 1000.0)
    except (OSError, ValueError):
        pass
    return out


def load_state(addr, pid, name, brokers, topics, pool, split):
    """Registers the state with raftns-bench (held open, so the brokers do not expire) and
    then times 5 GET_ALL_TOPIC_LIST; returns (bench process, its JSON result or None)."""
    args = [BENCH, "-a", addr, "-c", "1", "--mix", "alltopics=100", "--count", "5",
            "--brokers", str(brokers), "--topics", str(topics), "--topic-pool", str(pool),
            "--split", str(split), "--setup-conns", "4", "--pid", str(pid), "--json",
            "--hold", "900", "--label", name, "--grace", "60"]
    t0 = time.monotonic()
    b = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    PROCS.append(b)
    import select
    while time.monotonic() - t0 < SCALE_TIMEOUT:
        r, _, _ = select.select([b.stdout], [], [], 1.0)
        if r:
            line = b.stdout.readline()
            return b, (json.loads(line) if line else None)
        if b.poll() is not None:
            break
    return b, None


def rss_kb(pid):
    try:
        return int(open("/proc/%d/status" % pid).read().split("VmRSS:")[1].split()[0])
    except (OSError, IndexError, ValueError):
        return None


def run_scale(name, brokers, topics, pool, split):
    cl = Cluster(1, snapshot_threshold=1024)
    rec = {"brokers": brokers, "topics_per_broker": topics, "topic_pool": pool, "split": split}
    try:
        cl.leader()
        p = cl.procs[1]
        t0 = time.monotonic()
        b, res = load_state(cl.client(1), p.pid, name, brokers, topics, pool, split)
        if not res:
            rec["timed_out_after_s"] = round(time.monotonic() - t0, 1)
            rec["rss_kb_at_timeout"] = rss_kb(p.pid)
            log("%s: no result within %ss" % (name, SCALE_TIMEOUT))
            stop(b, signal.SIGKILL)
            return rec
        rec["bench"] = res
        rec["registration_s"] = res["setup"]["seconds"]
        rec["setup_errors"] = res["setup"]["errors"]
        rec["rss_kb_after_setup"] = res["setup"]["rss_kb"]
        rec["alltopics_p50_ms"] = res["latency"]["p50_us"] / 1000
        rec["alltopics_max_ms"] = res["latency"]["max_us"] / 1000
        rec["server_hwm_kb"] = res["server_hwm_kb"]
        n_topics = min(pool, brokers * topics)
        # Restart from the data dir while the bench still holds the registrations.
        t1 = time.monotonic()
        stop(p)
        rec["stop_s"] = round(time.monotonic() - t1, 3)
        ndir = os.path.join(cl.dir, "n1")
        rec["data_dir_bytes"] = sum(os.path.getsize(os.path.join(dp, f))
                                    for dp, _, fs in os.walk(ndir) for f in fs)
        rec["data_dir_files"] = sorted(os.listdir(ndir))
        snaps = [f for f in rec["data_dir_files"] if f.startswith("snapshot") and
                 not f.endswith(".meta")]
        rec["snapshot_bytes"] = max([os.path.getsize(os.path.join(ndir, f)) for f in snaps],
                                    default=0)
        # Restart at log level info: the server logs "fsm: restored a snapshot" with a
        # millisecond wall-clock stamp right after the snapshot is decoded into the route.
        n_before = len(log_times(cl.log_path(1), "restored a snapshot"))
        w2, t2 = time.time(), time.monotonic()
        cl.start_node(1, level="info")
        ready = wait_topics(cl.client(1), n_topics, SCALE_TIMEOUT)
        rec["restart_to_all_topics_s"] = round(time.monotonic() - t2, 3) if ready else None
        restored = log_times(cl.log_path(1), "restored a snapshot")[n_before:]
        rec["restart_to_snapshot_restored_s"] = round(restored[0] - w2, 3) if restored else None
        rec["restart_rss_kb"] = rss_kb(cl.procs[1].pid)
        stop(b, signal.SIGKILL)
        log("%-34s registration %.1f s, rss %s kB, 206 p50 %.1f ms, restart %s s "
            "(snapshot restored at %s s)" % (
                name, rec["registration_s"], rec["rss_kb_after_setup"], rec["alltopics_p50_ms"],
                rec["restart_to_all_topics_s"], rec["restart_to_snapshot_restored_s"]))
    finally:
        cl.close()
    return rec


def run_catchup(shape):
    """3-node cluster loaded with the state, then a 4th node (in the cluster file, no
    bootstrap) is started and added with `raftnsctl member add`; times until its /status
    applied_index reaches the leader's and it says ready."""
    brokers, topics, pool = (300, 10000, 10000) if shape == "300x10000" else (10, 10000, 100000)
    name = "catchup %s" % shape
    cl = Cluster(3, snapshot_threshold=1024, spare=1)
    rec = {"shape": shape, "brokers": brokers, "topics_per_broker": topics, "topic_pool": pool,
           "split": 800}
    b = None
    try:
        lid = cl.leader()
        t0 = time.monotonic()
        b, res = load_state(cl.client(lid), cl.procs[lid].pid, name, brokers, topics, pool, 800)
        if not res:
            rec["timed_out_after_s"] = round(time.monotonic() - t0, 1)
            log("%s: state not loaded within %ss" % (name, SCALE_TIMEOUT))
            return rec
        rec["registration_s"] = res["setup"]["seconds"]
        rec["setup_errors"] = res["setup"]["errors"]
        rec["leader_rss_kb"] = res["setup"]["rss_kb"]
        lid2 = cl.leader()  # leadership can move under load on 2 shared cores
        rec["leader_changed_during_load"] = lid2 != lid
        lid = lid2
        # The new node must install a snapshot, not replay the whole log: with
        # snapshotThreshold 1024 and raft's trailing 1024 entries the leader has compacted
        # index 1 away only after ~2,100 entries. A small state (100k shape: ~140 entries)
        # is padded with small registrations of one other broker (2 topics, changed each
        # time; its connection closes afterwards, which unregisters it: one more entry).
        pad = max(0, 2200 - int(cl.status(lid).get("applied_index", 0)))
        rec["padding_registrations"] = pad
        if pad:
            pr = bench(cl.client(lid), "catchup padding", 1, 1, mix="register=100",
                       extra=["--count", str(pad), "--no-setup", "--reg-topics", "2"],
                       timeout=SCALE_TIMEOUT)
            rec["padding_errors"] = pr and pr.get("errors")
            lid = cl.leader()
        lst = cl.status(lid)
        rec["leader_applied_index"] = lst.get("applied_index")
        w0, t_start = time.time(), time.monotonic()
        p4 = cl.start_node(4, level="info")
        n4 = cl.nodes[3]
        for _ in range(100):  # listening before it is added
            try:
                socket.create_connection(n4["raft"].split(":"), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        rec["start_to_listening_s"] = round(time.monotonic() - t_start, 3)
        cmd = [CTL, "-n", cl.client(lid), "--secret", "bench-cluster-secret-0123456789", "member", "add", "4", n4["raft"],
               n4["client"], n4["http"]]
        rec["command"] = " ".join(cmd)
        t_add = time.monotonic()
        rc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        rec["member_add_s"] = round(time.monotonic() - t_add, 3)
        rec["member_add_output"] = rc.stdout.decode().strip()
        if rc.returncode != 0:
            log("%s: member add failed: %s" % (name, rec["member_add_output"]))
            return rec
        deadline = t_add + SCALE_TIMEOUT
        caught = None
        while time.monotonic() < deadline:
            try:
                target = cl.status(lid).get("applied_index", 0)
                st = cl.status(4)
                if st.get("ready") and st.get("applied_index", 0) >= target:
                    caught = time.monotonic()
                    rec["node4_applied_index"] = st.get("applied_index")
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        rec["add_to_caught_up_s"] = round(caught - t_add, 3) if caught else None
        restored = log_times(cl.log_path(4), "restored a snapshot")
        rec["start_to_snapshot_restored_s"] = round(restored[0] - w0, 3) if restored else None
        rec["add_to_snapshot_restored_s"] = (round(restored[0] - w0 - (t_add - t_start), 3)
                                             if restored else None)
        rec["node4_rss_kb"] = rss_kb(p4.pid)
        ok = wait_topics(cl.client(4), min(pool, brokers * topics), 60)
        rec["node4_lists_all_topics"] = ok is not None
        log("%-34s member add -> caught up + ready %s s (snapshot restored %s s after add), "
            "node 4 rss %s kB" % (name, rec["add_to_caught_up_s"],
                                   rec["add_to_snapshot_restored_s"], rec["node4_rss_kb"]))
    finally:
        if b:
            stop(b, signal.SIGKILL)
        cl.close()
    return rec


def run_failover(ts):
    path = os.path.join(OUT, "failover-%s.json" % ts)
    cmd = [sys.executable, os.path.join(ROOT, "tools", "failover_bench.py"), "--trials",
           str(FAILOVER_TRIALS), "--timeline", str(FAILOVER_TIMELINE), "--skip", "term,heartbeats", "--json", path]
    env = dict(os.environ, RAFTNS_BIN=RAFTNS)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60 * (FAILOVER_TRIALS + 5))
    for line in p.stdout.decode().splitlines()[-3:]:
        log("   " + line)
    try:
        res = json.load(open(path))
    except (OSError, ValueError):
        log("failover bench failed:", p.stdout.decode()[-2000:])
        return None
    res["command"] = "RAFTNS_BIN=%s %s" % (RAFTNS, " ".join(cmd[1:]))
    res["json"] = os.path.relpath(path, ROOT)
    return res


def server_cpu_s(pid):
    """utime + stime of a process in seconds (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_tls():
    """Route reads (code 105, stock-shaped registration) on one permissive node, plain and
    TLS (verified against the test CA) interleaved, REPEATS runs each; medians and the cost."""
    certs = tempfile.mkdtemp(prefix="raftns-bench-certs-")
    TMPDIRS.append(certs)
    subprocess.run([os.path.join(ROOT, "tests", "security", "gen_certs.sh"), certs], check=True)
    one = Cluster(1, namesrv={"tlsServerCertPath": os.path.join(certs, "server.pem"),
                              "tlsServerKeyPath": os.path.join(certs, "server.key")})
    try:
        one.leader()
        pid = one.procs[1].pid
        for conns, depth in ((1, 1), (16, 1), (16, 16)):
            runs = {"plain": [], "tls": []}
            for _ in range(REPEATS):
                for mode in ("plain", "tls"):
                    extra = route_shape(conns, depth) + ["--setup-conns", "1"]
                    if mode == "tls":
                        extra += ["--tls-ca", os.path.join(certs, "ca.pem")]
                    cpu0 = server_cpu_s(pid)
                    r = bench(one.client(1), "route %s c%d d%d" % (mode, conns, depth),
                              conns, depth, pid=pid, extra=extra)
                    if r:
                        # Server CPU per answered request (setup included: 10 requests).
                        r["server_cpu_us_per_req"] = round(
                            (server_cpu_s(pid) - cpu0) * 1e6 / max(1, r["completed"]), 3)
                    runs[mode].append(r)
            p = summarize("1-node route plain c%d d%d" % (conns, depth), runs["plain"],
                          {"conns": conns, "depth": depth, "tls": False})
            t = summarize("1-node route TLS c%d d%d" % (conns, depth), runs["tls"],
                          {"conns": conns, "depth": depth, "tls": True})
            if p["throughput_median"] and t["throughput_median"]:
                cost = 1 - t["throughput_median"] / p["throughput_median"]
                cpu_p = median_of(runs["plain"], lambda r: r["server_cpu_us_per_req"])
                cpu_t = median_of(runs["tls"], lambda r: r["server_cpu_us_per_req"])
                RESULTS.setdefault("tls", []).append({
                    "conns": conns, "depth": depth, "plain_rps": p["throughput_median"],
                    "tls_rps": t["throughput_median"], "cost": cost,
                    "plain_runs_rps": [r and r["throughput"] for r in runs["plain"]],
                    "tls_runs_rps": [r and r["throughput"] for r in runs["tls"]],
                    "server_cpu_us_per_req_plain": cpu_p,
                    "server_cpu_us_per_req_tls": cpu_t})
                log("   TLS cost c%d d%d: %.1f %% of route read throughput; server CPU "
                    "%.2f -> %.2f us/request" % (conns, depth, 100 * cost, cpu_p, cpu_t))
    finally:
        one.close()


def run_security(rport):
    """Issue 8: what authentication and TLS cost. Route reads (code 105, stock-shaped
    registration) on three one-node servers -- plain, ACL on with anonymous reads, TLS
    (permissive, verified against the test CA) -- interleaved with redis GET at each point,
    REPEATS rounds; then replicated writes (changed 100-topic registrations) on a 3-node
    cluster through the leader and through a follower, with this build (signed node-to-node
    requests, authenticated raft transport) and, when BASE_RAFTNS names an older raftns
    binary, with that one in the same run."""
    certs = tempfile.mkdtemp(prefix="raftns-bench-certs-")
    TMPDIRS.append(certs)
    subprocess.run([os.path.join(ROOT, "tests", "security", "gen_certs.sh"), certs], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    servers = {
        "plain": Cluster(1),
        "acl": Cluster(1, namesrv={"aclEnable": "true", "aclAnonymousRead": "true",
                                   "aclBrokerNetworks": "127.0.0.1/32"}),
        "tls": Cluster(1, namesrv={"tlsServerCertPath": os.path.join(certs, "server.pem"),
                                   "tlsServerKeyPath": os.path.join(certs, "server.key")}),
    }
    out = RESULTS.setdefault("security", {"reads": [], "writes": []})
    parts = os.environ.get("SECURITY_PARTS", "reads,writes").split(",")
    try:
        for mode, cl in servers.items():
            cl.leader(write_probe=mode != "acl")  # an unsigned KV write is refused there
        for conns, depth in ((1, 1), (16, 1), (16, 16)) if "reads" in parts else ():
            runs = {k: [] for k in list(servers) + ["redis"]}
            for _ in range(REPEATS):
                for mode, cl in servers.items():
                    extra = route_shape(conns, depth) + ["--setup-conns", "1"]
                    if mode == "tls":
                        extra += ["--tls", "--tls-ca", os.path.join(certs, "ca.pem")]
                    runs[mode].append(bench(cl.client(1), "route %s c%d d%d" % (
                        mode, conns, depth), conns, depth, pid=cl.procs[1].pid, extra=extra))
                n = int(max(50000, (runs["plain"][-1] or {}).get("throughput", 50000) *
                            DURATION))
                runs["redis"].append(redis_get(rport, conns, depth, n))
            rrps = median_of(runs["redis"], lambda r: r["rps"])
            point = {"conns": conns, "depth": depth, "redis_rps": rrps,
                     "redis_runs_rps": [r and r["rps"] for r in runs["redis"]]}
            for mode in servers:
                rec = summarize("security route %s c%d d%d" % (mode, conns, depth), runs[mode],
                                {"conns": conns, "depth": depth, "mode": mode})
                point[mode + "_rps"] = rec["throughput_median"]
                point[mode + "_runs_rps"] = [r and r["throughput"] for r in runs[mode]]
                point[mode + "_p99_us"] = rec.get("p99_us_median")
                point[mode + "_vs_redis"] = (rec["throughput_median"] / rrps
                                             if rrps and rec["throughput_median"] else None)
            for mode in ("acl", "tls"):
                if point["plain_rps"] and point[mode + "_rps"]:
                    point[mode + "_cost"] = 1 - point[mode + "_rps"] / point["plain_rps"]
            out["reads"].append(point)
            log("   security c%d d%d: plain %.0f, acl %.0f, tls %.0f, redis %.0f req/s" % (
                conns, depth, point["plain_rps"] or 0, point["acl_rps"] or 0,
                point["tls_rps"] or 0, rrps or 0))
    finally:
        for cl in servers.values():
            cl.close()
    if "writes" not in parts:
        return
    builds = [("this", RAFTNS)]
    if os.environ.get("BASE_RAFTNS"):
        builds.append(("base", os.environ["BASE_RAFTNS"]))
    clusters = {tag: Cluster(3, binary=binary) for tag, binary in builds}
    try:
        leaders = {tag: cl.leader() for tag, cl in clusters.items()}
        for conns in (1, 64):
            for via in ("leader", "follower"):
                runs = {tag: [] for tag in clusters}
                for _ in range(REPEATS):
                    for tag, cl in clusters.items():
                        lid = leaders[tag]
                        target = lid if via == "leader" else next(
                            nd["id"] for nd in cl.nodes if nd["id"] != lid)
                        runs[tag].append(bench(cl.client(target), "register %s %s c%d" % (
                            tag, via, conns), conns, 1, mix="register=100",
                            pid=cl.procs[lid].pid))
                point = {"conns": conns, "via": via}
                for tag in clusters:
                    rec = summarize("security 3-node register %s via %s c%d" % (
                        tag, via, conns), runs[tag], {"conns": conns, "via": via,
                                                      "build": tag})
                    point[tag + "_rps"] = rec["throughput_median"]
                    point[tag + "_runs_rps"] = [r and r["throughput"] for r in runs[tag]]
                    point[tag + "_p50_us"] = rec.get("p50_us_median")
                    point[tag + "_p99_us"] = rec.get("p99_us_median")
                out["writes"].append(point)
                log("   security register via %s c%d: %s" % (via, conns, ", ".join(
                    "%s %.0f req/s" % (t, point[t + "_rps"] or 0) for t in clusters)))
    finally:
        for cl in clusters.values():
            cl.close()


def redis_set(port, conns, n):
    p = subprocess.run(["redis-benchmark", "-p", str(port), "-c", str(conns), "-t", "set",
                        "-n", str(n), "--csv"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, timeout=600)
    for line in p.stdout.decode().splitlines():
        cols = [c.strip('"') for c in line.split(",")]
        if cols and cols[0] == "SET":
            return {"rps": float(cols[1]), "p50_ms": float(cols[4]), "p99_ms": float(cols[6])}
    return None


def run_issue11_writes(rport):
    """Issue 11 item 3: replicated writes with the server's default timing (fsync on): one
    PUT_KV in flight through the leader and through a follower, changed 100-topic
    registrations from 64 connections through leader and follower (3 nodes) and on one node;
    redis SET at the same connection counts in the same rounds as the baseline."""
    out = RESULTS.setdefault("issue11_writes", [])
    builds = [("this", RAFTNS)]
    if os.environ.get("BASE_RAFTNS"):  # an older binary, interleaved run by run
        builds.append(("base", os.environ["BASE_RAFTNS"]))
    sets = {}
    try:
        for tag, binary in builds:
            three = Cluster(3, timing=False, binary=binary)
            one = Cluster(1, timing=False, binary=binary)
            sets[tag] = (three, one)
            lid = three.leader()
            fid = next(nd["id"] for nd in three.nodes if nd["id"] != lid)
            one.leader()
            sets[tag] = (three, one, [
                ("3-node kv via leader c1", three.client(lid), "kv=100", 1, three.procs[lid].pid),
                ("3-node kv via follower c1", three.client(fid), "kv=100", 1,
                 three.procs[fid].pid),
                ("3-node register via leader c64", three.client(lid), "register=100", 64,
                 three.procs[lid].pid),
                ("3-node register via follower c64", three.client(fid), "register=100", 64,
                 three.procs[fid].pid),
                ("1-node register c64", one.client(1), "register=100", 64, one.procs[1].pid)])
        for k in range(5):
            runs = {tag: [] for tag, _ in builds}
            red = []
            conns = sets["this"][2][k][3]
            for _ in range(REPEATS):
                for tag, _ in builds:
                    name, addr, mix, conns, pid = sets[tag][2][k]
                    runs[tag].append(bench(addr, "%s %s" % (name, tag), conns, 1, mix=mix,
                                           pid=pid))
                red.append(redis_set(rport, conns, 20000))
            redis_rps = median_of(red, lambda r: r["rps"])
            for tag, _ in builds:
                name = sets[tag][2][k][0]
                rec = summarize("%s (%s)" % (name, tag), runs[tag], {"conns": conns})
                out.append({"name": name, "build": tag, "rps": rec["throughput_median"],
                            "p50_us": rec["p50_us_median"], "p99_us": rec["p99_us_median"],
                            "runs_rps": [r and r["throughput"] for r in runs[tag]],
                            "runs_p50_us": [r and r["latency"]["p50_us"] for r in runs[tag]],
                            "runs_p99_us": [r and r["latency"]["p99_us"] for r in runs[tag]],
                            "errors": rec["errors"], "redis_set_rps": redis_rps,
                            "redis_set_p99_ms": median_of(red, lambda r: r["p99_ms"])})
            log("   redis SET c%d: %.0f req/s" % (conns, redis_rps or 0))
    finally:
        for v in sets.values():
            v[0].close()
            v[1].close()


def keepalive_round(conns):
    """One round of sequential QUERY_DATA_VERSION (322) keep-alives, one per broker connection
    (each answered before the next is sent): seconds, and how many were not code 0."""
    bad = 0
    t0 = time.monotonic()
    for i, c in enumerate(conns):
        ext = {"brokerAddr": "10.%d.%d.%d:10911" % ((i >> 16) & 255, (i >> 8) & 255, i & 255),
               "brokerName": "bench-b%d" % i, "clusterName": "BenchCluster", "brokerId": "0"}
        r = c.request(322, ext, b'{"counter":1,"stateVersion":0,"timestamp":1700000000000}',
                      timeout=60)
        bad += r.code != 0
    return time.monotonic() - t0, bad


def run_fairness():
    """Issue 11 item 2: a round of FAIR_BROKERS sequential 322 keep-alives (one connection per
    broker), idle and while raftns-bench reads routes with FAIR_CONNS x FAIR_DEPTH pipelining,
    on one node holding FAIR_BROKERS x FAIR_TOPICS (whole, stock-shaped registrations); REPEATS
    rounds each, medians."""
    brokers = int(os.environ.get("FAIR_BROKERS", "300"))
    topics = int(os.environ.get("FAIR_TOPICS", "10000"))
    rconns = int(os.environ.get("FAIR_CONNS", "16"))
    depth = int(os.environ.get("FAIR_DEPTH", "16"))
    READ_S = 6 + 6 * REPEATS  # the readers outlast the rounds (checked below)
    cl = Cluster(1, timing=False)
    rec = {"brokers": brokers, "topics": topics, "read_conns": rconns, "depth": depth}
    conns = []
    try:
        cl.leader()
        pid = cl.procs[1].pid
        t0 = time.monotonic()
        b, res = load_state(cl.client(1), pid, "fairness load", brokers, topics, topics, 0)
        rec["load_s"] = round(time.monotonic() - t0, 1)
        if not res:
            log("fairness: state not loaded within %ss" % SCALE_TIMEOUT)
            return rec
        conns = [nsclient.Conn(cl.client(1), timeout=30) for _ in range(brokers)]
        idle, loaded, bad = [], [], 0
        for _ in range(REPEATS):
            s, e = keepalive_round(conns)
            idle.append(s)
            bad += e
        reader = subprocess.Popen(
            [BENCH, "-a", cl.client(1), "-c", str(rconns), "-d", str(depth), "--mix",
             "route=100", "--no-setup", "--brokers", str(brokers), "--topics", str(topics),
             "--topic-pool", str(topics), "--duration", str(READ_S), "--json",
             "--label", "fairness readers"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        PROCS.append(reader)
        time.sleep(3)  # let the readers reach full pipelining
        for _ in range(REPEATS):
            s, e = keepalive_round(conns)
            loaded.append(s)
            bad += e
        rec["readers_still_running"] = reader.poll() is None  # else the rounds ran late
        out, _ = reader.communicate(timeout=READ_S + 120)
        try:
            rec["readers"] = json.loads(out.decode().strip().splitlines()[0])
        except (IndexError, ValueError):
            rec["readers"] = None
        rec.update({"idle_rounds_s": idle, "loaded_rounds_s": loaded, "bad_replies": bad,
                    "idle_median_s": statistics.median(idle),
                    "loaded_median_s": statistics.median(loaded)})
        try:
            rec["lag_metrics"] = [ln for ln in __import__("urllib.request").request.urlopen(
                "http://%s/metrics" % cl.nodes[0]["http"], timeout=5).read().decode()
                .splitlines() if ln.startswith("raftns_event_loop")]
        except OSError:
            pass
        rd = rec.get("readers") or {}
        log("fairness %dx%d: keep-alive round idle %.3f s, under %dx%d route load %.3f s "
            "(rounds %s / %s, %d bad replies); readers %.0f req/s p99 %.1f ms%s" % (
                brokers, topics, rec["idle_median_s"], rconns, depth, rec["loaded_median_s"],
                ["%.3f" % x for x in idle], ["%.3f" % x for x in loaded], bad,
                rd.get("throughput", 0), (rd.get("latency") or {}).get("p99_us", 0) / 1000,
                "" if rec["readers_still_running"] else " (READERS ENDED FIRST)"))
        stop(b, signal.SIGKILL)
    finally:
        for c in conns:
            c.close()
        cl.close()
    RESULTS["fairness"] = rec
    return rec


def run_raft_tls():
    """Replicated writes (register, through the leader) on two 3-node clusters running side by
    side, one plain and one with raftTls=enforcing (the client port plain on both, so only the
    raft traffic differs), REPEATS runs each, interleaved; medians and the cost."""
    certs = tempfile.mkdtemp(prefix="raftns-bench-certs-")
    TMPDIRS.append(certs)
    subprocess.run([os.path.join(ROOT, "tests", "security", "gen_certs.sh"), certs], check=True)
    tls_sets = {"raftTls": "enforcing", "tlsMode": "disabled",
                "tlsServerCertPath": os.path.join(certs, "server.pem"),
                "tlsServerKeyPath": os.path.join(certs, "server.key"),
                "tlsServerTrustCertPath": os.path.join(certs, "ca.pem")}
    clusters = {"plain": Cluster(3), "raft-tls": Cluster(3, namesrv=tls_sets)}
    try:
        leaders = {k: cl.leader() for k, cl in clusters.items()}
        for conns in (1, 64):
            runs = {k: [] for k in clusters}
            for _ in range(REPEATS):
                for k, cl in clusters.items():
                    lid = leaders[k]
                    runs[k].append(bench(cl.client(lid), "3-node register %s c%d" % (k, conns),
                                         conns, 1, mix="register=100", pid=cl.procs[lid].pid))
            p = summarize("3-node register plain c%d" % conns, runs["plain"],
                          {"conns": conns, "depth": 1, "raft_tls": False})
            t = summarize("3-node register raftTls c%d" % conns, runs["raft-tls"],
                          {"conns": conns, "depth": 1, "raft_tls": True})
            if p["throughput_median"] and t["throughput_median"]:
                cost = 1 - t["throughput_median"] / p["throughput_median"]
                RESULTS.setdefault("raft_tls", []).append({
                    "conns": conns, "plain_wps": p["throughput_median"],
                    "raft_tls_wps": t["throughput_median"], "cost": cost,
                    "plain_runs": [r and r["throughput"] for r in runs["plain"]],
                    "raft_tls_runs": [r and r["throughput"] for r in runs["raft-tls"]]})
                log("   raftTls cost c%d: %.1f %% of replicated write throughput" %
                    (conns, 100 * cost))
    finally:
        for cl in clusters.values():
            cl.close()


def main():
    RESULTS["machine"] = machine()
    RESULTS["config"] = {"repeats": REPEATS, "duration_s": DURATION}
    rport = free_ports(1)[0]
    redis = start(["redis-server", "--port", str(rport), "--save", "", "--appendonly", "no",
                   "--bind", "127.0.0.1"], os.path.join(OUT, "redis.log"))
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", rport), 0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    subprocess.run(["redis-cli", "-p", str(rport), "set", "key:__rand_int__", "x"],
                   stdout=subprocess.DEVNULL)
    if "tls" in ONLY:
        run_tls()
    if "security" in ONLY:
        run_security(rport)
    if "raft-tls" in ONLY:
        run_raft_tls()
    if "writes" in ONLY:
        run_issue11_writes(rport)
    if "fairness" in ONLY:
        run_fairness()
    if want("route") or want("register") or want("heartbeat"):
        one = Cluster(1)
        one.leader()
        run_route_and_redis(one, rport, one.procs[1].pid)
        run_writes(one, "1-node", one.procs[1].pid)
        one.close()
    if want("cluster3"):
        three = Cluster(3)
        lid = three.leader()
        run_writes(three, "3-node", three.procs[lid].pid)
        runs = [bench(three.client(lid), "3-node route c16", 16, 1, pid=three.procs[lid].pid,
                      extra=route_shape(16, 1)) for _ in range(REPEATS)]
        summarize("3-node route c16 d1 (leader)", runs, {"conns": 16, "depth": 1})
        three.close()
    stop(redis)
    if SCALE and want("scale"):
        RESULTS["scale"]["300x10000"] = run_scale("scale 300x10000", 300, 10000, 10000, 800)
        RESULTS["scale"]["100k-topics"] = run_scale("scale 10x10000 (100k)", 10, 10000,
                                                    100000, 800)
    if SCALE and want("catchup"):
        RESULTS["catchup"] = run_catchup(CATCHUP_SHAPE)
    ts = time.strftime("%Y%m%d-%H%M%S")
    if FAILOVER_TRIALS > 0 and want("failover"):
        RESULTS["failover"] = run_failover(ts)
    RESULTS["machine"]["loadavg_end"] = open("/proc/loadavg").read().strip()
    if ONLY and ONLY <= {"writes", "fairness"}:  # own file; latest.json, plots stay
        path = os.path.join(OUT, "%s-%s.json" % ("-".join(sorted(ONLY)), ts))
        with open(path, "w") as f:
            json.dump(RESULTS, f, indent=1)
        log("wrote", path)
        return
    path = os.path.join(OUT, "results-%s.json" % ts)
    with open(path, "w") as f:
        json.dump(RESULTS, f, indent=1)
    shutil.copy(path, os.path.join(OUT, "latest.json"))
    log("wrote", path)
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bench_plot.py"),
                    os.path.join(OUT, "latest.json"), OUT])


try:
    main()
finally:
    cleanup()
PY
