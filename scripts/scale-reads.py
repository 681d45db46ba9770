#!/usr/bin/env python3
"""Route reads at a stock-shaped scale, interleaved with a redis GET baseline of the same value
size: one raftns node gets B brokers x T topics (whole-body registrations, held open by a
raftns-bench --hold), then for each point (connections x pipeline depth, client version) it runs
ROUNDS rounds of raftns-bench route reads and redis-benchmark GET with -d = the route reply's
size, alternating, and prints the medians as JSON lines.

usage: scripts/scale-reads.py [--build DIR] [--raftns BIN] [--brokers B] [--topics T] [--rounds N]
                              [--duration S] [--points 16x1,16x16] [--versions 479,409]"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("port %d not open" % port)


def redis_get(port, conns, depth, n, size):
    # GET reads the benchmark's one key ("key:__rand_int__" without -r): SET it to a value of
    # the reply's size first, or GET answers nil.
    subprocess.run(["redis-benchmark", "-p", str(port), "-c", "1", "-t", "set", "-n", "10",
                    "-d", str(size)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=600, check=True)
    p = subprocess.run(["redis-benchmark", "-p", str(port), "-c", str(conns), "-P", str(depth),
                        "-t", "get", "-n", str(n), "-d", str(size), "--csv"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=600)
    for line in p.stdout.decode().splitlines():
        cols = [c.strip('"') for c in line.split(",")]
        if cols and cols[0] == "GET":
            return {"rps": float(cols[1]), "p50_ms": float(cols[4]), "p99_ms": float(cols[6])}
    raise RuntimeError("redis-benchmark gave no GET line")


def reply_size(port, version):
    """Bytes of one GET_ROUTEINFO_BY_TOPIC reply frame body (topic BenchTopic0) for version."""
    hdr = json.dumps({"code": 105, "flag": 0, "language": "JAVA", "opaque": 1,
                      "serializeTypeCurrentRPC": "JSON", "version": version,
                      "extFields": {"topic": "BenchTopic0"}}).encode()
    frame = (len(hdr) + 4).to_bytes(4, "big") + len(hdr).to_bytes(4, "big") + hdr
    with socket.create_connection(("127.0.0.1", port), 10) as s:
        s.sendall(frame)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + int.from_bytes(buf[:4], "big"):
            chunk = s.recv(1 << 20)
            if not chunk:
                raise RuntimeError("closed")
            buf += chunk
    total = int.from_bytes(buf[:4], "big")
    hlen = int.from_bytes(buf[4:8], "big") & 0xFFFFFF
    return total - 4 - hlen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--raftns", help="server binary (default BUILD/raftns)")
    ap.add_argument("--brokers", type=int, default=300)
    ap.add_argument("--topics", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=4)
    ap.add_argument("--points", default="16x1,16x16")
    ap.add_argument("--versions", default="479,409")
    a = ap.parse_args()
    bench = os.path.join(a.build, "raftns-bench")
    work = tempfile.mkdtemp(prefix="raftns-scale-reads-")
    procs = []
    try:
        c, r, h, rp = free_port(), free_port(), free_port(), free_port()
        log = open(os.path.join(work, "raftns.log"), "w")
        ns = subprocess.Popen([a.raftns or os.path.join(a.build, "raftns"), "--id", "1", "--data-dir",
                               os.path.join(work, "d"), "--client-addr", "127.0.0.1:%d" % c,
                               "--raft-addr", "127.0.0.1:%d" % r, "--http-addr",
                               "127.0.0.1:%d" % h, "--log-level", "warn",
                               # the held brokers' connections are idle: not closed at 120 s
                               "--set", "serverChannelMaxIdleTimeSeconds=3600"], stdout=log,
                              stderr=log)
        procs.append(ns)
        red = subprocess.Popen(["redis-server", "--port", str(rp), "--save", "",
                                "--appendonly", "no"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        procs.append(red)
        wait_port(c)
        wait_port(rp)
        t0 = time.monotonic()
        hold = subprocess.Popen([bench, "-a", "127.0.0.1:%d" % c, "-c", "1", "--mix",
                                 "cluster=100", "--count", "1", "--brokers", str(a.brokers),
                                 "--topics", str(a.topics), "--topic-pool", str(a.topics),
                                 "--setup-conns", "4", "--pid", str(ns.pid), "--hold", "3600",
                                 # held brokers send no heartbeat: keep them for the hour
                                 "--broker-timeout", "3600000",
                                 "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        procs.append(hold)
        setup = json.loads(hold.stdout.readline())
        print(json.dumps({"setup_s": round(time.monotonic() - t0, 1),
                          "setup_errors": setup["setup"]["errors"],
                          "rss_kb": setup["setup"]["rss_kb"]}), flush=True)
        for version in [int(v) for v in a.versions.split(",")]:
            for point in a.points.split(","):
                conns, depth = (int(x) for x in point.split("x"))
                ours, theirs, sizes = [], [], []
                for _ in range(a.rounds):
                    p = subprocess.run([bench, "-a", "127.0.0.1:%d" % c, "-c", str(conns), "-d",
                                        str(depth), "--mix", "route=100", "--no-setup",
                                        "--topic-pool", str(a.topics), "--duration",
                                        str(a.duration), "--client-version", str(version),
                                        "--pid", str(ns.pid), "--json"],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       timeout=600)
                    res = json.loads(p.stdout.decode().splitlines()[0])
                    ours.append(res)
                    # bytes_in also counts replies that arrive after the measured window
                    # (the grace drain), so the size is that of one read, asked alone.
                    size = reply_size(c, version)
                    sizes.append(size)
                    n = max(10000, int(res["throughput"] * a.duration))
                    theirs.append(redis_get(rp, conns, depth, n, size))
                med = statistics.median
                # every kind: closed, unanswered, code_17 (no route), other codes
                errs = sum(sum(x["errors"].values()) for x in ours)
                out = {"version": version, "conns": conns, "depth": depth,
                       "reply_bytes": med(sizes),
                       "raftns_rps": round(med([x["throughput"] for x in ours])),
                       "raftns_p50_us": med([x["latency"]["p50_us"] for x in ours]),
                       "raftns_p99_us": med([x["latency"]["p99_us"] for x in ours]),
                       "redis_rps": round(med([x["rps"] for x in theirs])),
                       "redis_p50_ms": med([x["p50_ms"] for x in theirs]),
                       "redis_p99_ms": med([x["p99_ms"] for x in theirs]),
                       "errors": errs,
                       "server_rss_kb": ours[-1]["server_rss_kb"],
                       "server_hwm_kb": ours[-1]["server_hwm_kb"],
                       "raftns_runs": [round(x["throughput"]) for x in ours],
                       "redis_runs": [round(x["rps"]) for x in theirs]}
                out["ratio"] = round(out["raftns_rps"] / out["redis_rps"], 2)
                print(json.dumps(out), flush=True)
        try:
            m = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % h, timeout=5).read()
            print(json.dumps({"metrics": [l for l in m.decode().splitlines()
                                          if l.startswith("raftns_route_cache")]}))
        except OSError:
            pass
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
