#!/usr/bin/env python3
"""Standby (read replica) bench: commit latency of a cluster of 3 voters against the same with 2
standbys, and route-read throughput against one node against all the nodes of the 3+2 cluster at
once, with redis-benchmark GET from the same run as the baseline. Python 3 standard library; it
drives real raftns processes through tests/process/clusterh.py and tools/raftns-bench. Numbers
only; it judges nothing.

  RAFTNS_BIN=build/raftns RAFTNSCTL_BIN=build/raftnsctl python3 tools/standby_bench.py \\
      --bench build/raftns-bench --repeats 3 --duration 4 [--no-reads]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "process"))
import clusterh  # noqa: E402
import harness  # noqa: E402

SECRET = "raftns-test-secret"


def ctl(nodes, *args):
    a = [os.environ.get("RAFTNSCTL_BIN", "build/raftnsctl"), "--secret", SECRET]
    for nd in nodes:
        a += ["-n", "127.0.0.1:%d" % nd.client_port]
    r = subprocess.run(a + list(args), capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise SystemExit("raftnsctl %s: %s %s" % (" ".join(args), r.stdout, r.stderr))
    return r.stdout


def make_cluster(standbys, voters=3):
    c = clusterh.Cluster(voters + standbys, log_level="warn")
    for i in range(voters, voters + standbys):
        c.config["nodes"][i]["bootstrap"] = False
    with open(c.config_path, "w") as f:
        json.dump(c.config, f, indent=2)
    first = [c[i] for i in range(1, voters + 1)]
    for nd in first:
        nd.start(wait=False)
    c.wait_ready(nodes=first)
    c.leader(nodes=first)
    for i in range(voters + 1, voters + 1 + standbys):
        nd = c[i]
        nd.start(wait=False)
        ctl(first, "member", "add", str(i), "127.0.0.1:%d" % nd.raft_port,
            "127.0.0.1:%d" % nd.client_port, nd.http_addr, "--role", "standby")
    c.wait_ready()
    return c


def bench(binary, nd, args, duration):
    cmd = [binary, "-a", "127.0.0.1:%d" % nd.client_port, "--duration", str(duration),
           "--json"] + args
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 120)
    if r.returncode != 0:
        raise SystemExit("%s: %s" % (" ".join(cmd), r.stderr))
    return json.loads(r.stdout)


def commit_latency(binary, c, duration):
    """One connection, one outstanding register with a changed set each time: every request is
    one commit (leader append + a majority of the voters) and apply."""
    rep = bench(binary, c.leader(), ["-c", "1", "--mix", "register", "--brokers", "1",
                                     "--reg-topics", "10"], duration)
    return rep["latency"]["p50_us"], rep["throughput"]


def hold_brokers(binary, c, duration):
    """10 bench brokers x 100 topics registered through the leader and held open (a name
    server drops a broker whose connection closed) until the returned process is killed."""
    holder = subprocess.Popen(
        [binary, "-a", "127.0.0.1:%d" % c.leader().client_port, "--brokers", "10", "--topics",
         "100", "--count", "1", "--hold", str(duration), "--json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for nd in c.all():
        harness.wait_until(lambda nd=nd: harness.observed(
            len(clusterh.cluster_brokers(nd)) >= 10, clusterh.cluster_brokers(nd)), 60,
            "bench brokers on node %d" % nd.id)
    return holder


def reads(binary, nodes, duration, conns):
    """Route reads against every node of nodes at once (one bench process each); the summed
    throughput and the errors."""
    procs = [subprocess.Popen(
        [binary, "-a", "127.0.0.1:%d" % nd.client_port, "--no-setup", "--brokers", "10",
         "--topics", "100", "-c", str(conns), "--mix", "route", "--duration", str(duration),
         "--grace", "1", "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True) for nd in nodes]
    out = [json.loads(p.communicate(timeout=duration + 60)[0]) for p in procs]
    errors = sum(sum(v for k, v in o["errors"].items()) for o in out)
    return sum(o["throughput"] for o in out), errors


def redis_get(conns, duration):
    port = harness.free_ports(1)[0]
    srv = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly",
                            "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        harness.wait_until(lambda: subprocess.run(["redis-cli", "-p", str(port), "ping"],
                                                  capture_output=True).returncode == 0,
                           10, "redis up")
        n = int(40000 * duration)
        r = subprocess.run(["redis-benchmark", "-p", str(port), "-t", "get", "-c", str(conns),
                            "-n", str(n), "-q", "--csv"], capture_output=True, text=True,
                           timeout=duration * 10 + 60)
        line = [ln for ln in r.stdout.splitlines() if ln.startswith('"GET"')][0]
        return float(line.split(",")[1].strip('"'))
    finally:
        srv.terminate()
        srv.wait()


def measure_reads(a, res):
    """Route reads on a 3 + 2 cluster: against the leader alone, then against all 5 nodes at
    once; redis-benchmark GET after each pair, as the same run's baseline."""
    withsb = make_cluster(2)
    try:
        holder = hold_brokers(a.bench, withsb, 3 * a.repeats * (a.duration + 10) + 60)
        try:
            for _ in range(a.repeats):
                for key, nodes in (("leader only", [withsb.leader()]),
                                   ("all 5 nodes", withsb.all())):
                    rps, errors = reads(a.bench, nodes, a.duration, a.conns)
                    res["reads_rps"][key].append(rps)
                    res.setdefault("read_errors", []).append(errors)
                res["redis_get_rps"].append(redis_get(a.conns, a.duration))
        finally:
            holder.kill()
            holder.wait()
    finally:
        withsb.cleanup(check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/raftns-bench")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--duration", type=float, default=4)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--no-reads", action="store_true", help="commit latency only")
    a = ap.parse_args()
    shapes = (("3 voters", 0, 3), ("3 voters + 2 standbys", 2, 3), ("5 voters", 0, 5))
    res = {"commit_p50_us": {k: [] for k, _, _ in shapes},
           "commit_rps": {k: [] for k, _, _ in shapes},
           "reads_rps": {"leader only": [], "all 5 nodes": []}, "redis_get_rps": []}
    # commit latency: the shapes alternate, each a fresh cluster alone on the machine (the
    # others stopped), so every shape sees the same background load
    for _ in range(a.repeats):
        for key, standbys, voters in shapes:
            c = make_cluster(standbys, voters)
            try:
                p50, rps = commit_latency(a.bench, c, a.duration)
            finally:
                c.cleanup(check=False)
            res["commit_p50_us"][key].append(p50)
            res["commit_rps"][key].append(rps)
    if not a.no_reads:
        measure_reads(a, res)

    def med(v):
        return statistics.median(v)
    for k, v in res["commit_p50_us"].items():
        print("commit p50 %-22s median %8.0f us  runs %s  (req/s median %.0f)" %
              (k, med(v), ["%.0f" % x for x in v], med(res["commit_rps"][k])))
    for k, v in res["reads_rps"].items() if res["redis_get_rps"] else ():
        print("route reads %-20s median %8.0f req/s  runs %s" % (k, med(v),
                                                                ["%.0f" % x for x in v]))
    if res["redis_get_rps"]:
        print("redis GET (-c %d)                 median %8.0f req/s  runs %s" %
              (a.conns, med(res["redis_get_rps"]), ["%.0f" % x for x in res["redis_get_rps"]]))
    print(json.dumps(res))


if __name__ == "__main__":
    main()
