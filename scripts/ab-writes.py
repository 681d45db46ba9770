#!/usr/bin/env python3
"""A/B of changed 100-topic registrations (or PUT_KV: --kind kv) on fresh clusters of 3 nodes (or --nodes; 127.0.0.1,
default timing, fsync on): the variants alternate run by run, each run on a new cluster in a
temporary dir, and the medians of req/s and p99 are printed per variant (BENCHMARKS.md).

Usage: scripts/ab-writes.py [--rounds N] [--conns C] [--kind register|kv] [--via leader|follower] [--nodes 1|3|5]
           [--duration S] [--bench PATH] [--extra-args "ARGS"] NAME=BINARY[:JSON] ...
JSON (optional) is merged into the cluster file's top level, e.g.
    scripts/ab-writes.py fork=build/raftns:'{"forkStateBytes":1}' loop=build/raftns
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
import urllib.request

BASE_PORT = 29000


def cluster_file(path, extra, n):
    nodes = [{"id": i, "raft": "127.0.0.1:%d" % (BASE_PORT + i),
              "client": "127.0.0.1:%d" % (BASE_PORT + 100 + i),
              "http": "127.0.0.1:%d" % (BASE_PORT + 200 + i), "bootstrap": True}
             for i in range(1, n + 1)]
    conf = {"secret": "ab-writes-secret-0123456789", "nodes": nodes,
            "namesrv": {"clientMaxConnectionsPerIp": 10000}}
    conf.update(extra)
    with open(path, "w") as f:
        json.dump(conf, f)


def role(i):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/status" % (BASE_PORT + 200 + i),
                                    timeout=1) as r:
            return json.load(r).get("role")
    except OSError:
        return None


def run_once(binary, extra, args):
    d = tempfile.mkdtemp(prefix="ab-writes-")
    procs = []
    try:
        ids = range(1, args.nodes + 1)
        cluster_file(os.path.join(d, "c.json"), extra, args.nodes)
        for i in ids:
            log = open(os.path.join(d, "log%d" % i), "w")
            procs.append(subprocess.Popen(
                [binary, "--config", os.path.join(d, "c.json"), "--id", str(i), "--data-dir",
                 os.path.join(d, "n%d" % i), "--log-level", "warn"] + args.extra_args.split(),
                stdout=log, stderr=log))
        deadline = time.time() + 20
        leader = None
        while leader is None and time.time() < deadline:
            leader = next((i for i in ids if role(i) == "leader"), None)
            time.sleep(0.1)
        if leader is None:
            raise SystemExit("no leader in 20 s (logs in %s)" % d)
        target = leader if args.via == "leader" else leader % args.nodes + 1
        out = subprocess.run(
            [args.bench, "-a", "127.0.0.1:%d" % (BASE_PORT + 100 + target), "-c",
             str(args.conns), "-d", "1", "--mix", args.kind + "=100", "--duration",
             str(args.duration)], capture_output=True, text=True, timeout=args.duration + 60)
        m = re.search(r"^%s\s+\d+\s+(\d+)\s+\S+\s+\S+\s+(\S+)" % args.kind,
                      out.stdout + out.stderr, re.M)
        if m is None:
            raise SystemExit("no result from raftns-bench:\n" + out.stdout + out.stderr)
        return int(m.group(1)), float(m.group(2)) / 1000.0
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--kind", choices=("register", "kv"), default="register",
                    help="the write: changed 100-topic registrations or PUT_KV")
    ap.add_argument("--via", choices=("leader", "follower"), default="leader")
    ap.add_argument("--nodes", type=int, choices=(1, 3, 5), default=3)
    ap.add_argument("--duration", type=int, default=6)
    ap.add_argument("--bench", default="build/raftns-bench")
    ap.add_argument("--extra-args", default="")
    ap.add_argument("variants", nargs="+")
    args = ap.parse_args()
    variants = []
    for v in args.variants:
        name, _, spec = v.partition("=")
        binary, _, js = spec.partition(":")
        variants.append((name, binary, json.loads(js) if js else {}))
    results = {name: [] for name, _, _ in variants}
    for _ in range(args.rounds):
        for name, binary, extra in variants:
            rps, p99 = run_once(binary, extra, args)
            results[name].append((rps, p99))
            print("%-12s %6d req/s  p99 %6.1f ms" % (name, rps, p99), flush=True)
    for name, runs in results.items():
        print("%-12s median %6d req/s  p99 %6.1f ms  runs %s" % (
            name, statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
            ", ".join("%d/%.1f" % r for r in runs)))


if __name__ == "__main__":
    main()
