#!/usr/bin/env python3
"""Failover and heartbeat-cost benchmark for a local 3-node raftns cluster (issue 3 item 10).
Measures (1) kill -9 of the leader -> first acknowledged write on a survivor, (2) SIGTERM of the
leader -> longest gap between acknowledged writes on a survivor, (3) raft log entries written per
1,000 unchanged heartbeats. Writes are REGISTER_BROKER with a changed DataVersion sent in a tight
loop (one outstanding request) to a survivor. It prints numbers; it asserts nothing (tests assert
behaviour, this measures). Uses the process-test harness in tests/process.

With --timeline N it also runs N timeline trials: the same write loop runs from 2 s before the
kill -9 to 3 s after the first acknowledged write, and every acknowledgement time is recorded
relative to the kill (for the failover timeline plot of scripts/bench.sh).

Usage: RAFTNS_BIN=build/raftns python3 tools/failover_bench.py [--trials 20] [--election-ms 1000]
       [--skip kill,term,heartbeats] [--timeline N] [--json FILE]"""

import argparse
import json
import os
import platform
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "process"))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402


def pct(samples, p):
    """Nearest-rank percentile."""
    s = sorted(samples)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def try_write(broker, nd, timeout):
    """One REGISTER_BROKER with a new DataVersion; True when acknowledged (code 0)."""
    broker.counter += 1
    try:
        r = broker.register(nd, timeout=timeout)
        return r.code == ns.SUCCESS
    except (OSError, ns.ConnectionClosed, TimeoutError, ns.ProtocolError):
        broker.drop(nd)
        return False


def settle(cluster, broker):
    """Every node up, one leader, converged, the broker registered through every node."""
    for nd in cluster.all():
        if not nd.alive():
            nd.start(wait=False)
    cluster.wait_ready(cluster.all(), timeout=60.0)
    leader = cluster.leader(timeout=60.0)
    for nd in cluster.all():
        deadline = time.monotonic() + 30.0
        while not try_write(broker, nd, 5.0):
            if time.monotonic() > deadline:
                raise RuntimeError("cannot write through node %d" % nd.id)
            time.sleep(0.05)
    cluster.wait_converged(timeout=60.0)
    return leader


def kill_trial(cluster, broker):
    leader = settle(cluster, broker)
    survivor = cluster.followers(leader)[0]
    broker.conn(survivor)  # connected before the clock starts
    t0 = time.monotonic()
    leader.kill9()
    attempts = 0
    while True:
        attempts += 1
        if try_write(broker, survivor, 10.0):
            return time.monotonic() - t0, attempts
        if time.monotonic() - t0 > 60.0:
            raise RuntimeError("no write acknowledged within 60 s of kill -9")


def timeline_trial(cluster, broker, before=2.0, after=3.0):
    """Acknowledged-write times (s, relative to the kill -9 of the leader) of one write loop
    against a survivor, from `before` s before the kill to `after` s after the first ack."""
    leader = settle(cluster, broker)
    survivor = cluster.followers(leader)[0]
    broker.conn(survivor)
    acks = []
    t_start = time.monotonic()
    while time.monotonic() - t_start < before:
        if try_write(broker, survivor, 5.0):
            acks.append(time.monotonic())
    t0 = time.monotonic()
    leader.kill9()
    first = None
    while first is None or time.monotonic() - first < after:
        if try_write(broker, survivor, 10.0):
            now = time.monotonic()
            acks.append(now)
            if first is None and now > t0:
                first = now
        if time.monotonic() - t0 > 60.0:
            raise RuntimeError("no write acknowledged within 60 s of kill -9")
    return [round(t - t0, 4) for t in acks], round(first - t0, 4)


def term_trial(cluster, broker):
    leader = settle(cluster, broker)
    survivor = cluster.followers(leader)[0]
    broker.conn(survivor)
    acks = []
    # Some writes before the stop, so the gap is measured between two acknowledged writes.
    for _ in range(20):
        if try_write(broker, survivor, 5.0):
            acks.append(time.monotonic())
    t_term = time.monotonic()
    leader.proc.send_signal(signal.SIGTERM)
    while time.monotonic() - t_term < 3.0 or not acks or acks[-1] < t_term:
        if try_write(broker, survivor, 10.0):
            acks.append(time.monotonic())
        if time.monotonic() - t_term > 60.0:
            raise RuntimeError("no write acknowledged within 60 s of SIGTERM")
    rc = leader.proc.wait(30.0)
    leader.expect_dead = True
    window = [t for t in acks if t >= t_term - 1.0]
    gap = max(b - a for a, b in zip(window, window[1:]))
    return gap, rc


def heartbeat_cost(cluster, n=1000):
    broker = clusterh.Broker(name="broker-hb", addr="127.0.0.1:30911", topics=["TopicHB", "TopicHB2"])
    try:
        settle(cluster, broker)
        before = max(st["commit_index"] for st in cluster.statuses().values())
        reg = broker.register_request()
        nodes = cluster.all()
        for i in range(0, n, 100):
            replies = broker.conn(nodes[(i // 100) % len(nodes)]).pipeline(
                [dict(reg) for _ in range(100)], timeout=60.0)
            bad = [r for r in replies if r.code != ns.SUCCESS]
            if bad:
                raise RuntimeError("heartbeat rejected: %r" % bad[0])
        after = max(st["commit_index"] for st in cluster.statuses().values())
        return after - before
    finally:
        broker.close()


def summary(name, xs, unit="s"):
    return {"name": name, "n": len(xs), "p50": pct(xs, 50), "p99": pct(xs, 99),
            "min": min(xs) if xs else None, "max": max(xs) if xs else None, "unit": unit,
            "samples": [round(x, 4) for x in xs]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--election-ms", type=int, default=1000)
    ap.add_argument("--skip", default="")
    ap.add_argument("--timeline", type=int, default=0)
    ap.add_argument("--json")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    out = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                       "python": platform.python_version()},
           "raftns": harness.RAFTNS_BIN, "election_ms": args.election_ms,
           "trials": args.trials, "results": []}
    cluster = clusterh.Cluster(3, election_ms=args.election_ms, log_level="warn")
    broker = clusterh.Broker(name="broker-bench", addr="127.0.0.1:60911", topics=["TopicBench", "TopicBench2"])
    try:
        cluster.start()
        if "kill" not in skip:
            xs = []
            for i in range(args.trials):
                dt, attempts = kill_trial(cluster, broker)
                xs.append(dt)
                print("kill -9 trial %2d: first ack after %.3f s (%d attempts)" %
                      (i + 1, dt, attempts), flush=True)
            out["results"].append(summary("kill9_leader_to_first_ack", xs))
        if args.timeline:
            tl = []
            for i in range(args.timeline):
                acks, first = timeline_trial(cluster, broker)
                tl.append({"first_ack_s": first, "acks_s": acks})
                print("timeline trial %d: %d acks, first after kill at %.3f s" %
                      (i + 1, len(acks), first), flush=True)
            out["timeline"] = tl
        if "term" not in skip:
            xs = []
            for i in range(args.trials):
                gap, rc = term_trial(cluster, broker)
                xs.append(gap)
                print("SIGTERM trial %2d: write gap %.3f s (leader exit %s)" % (i + 1, gap, rc),
                      flush=True)
            out["results"].append(summary("sigterm_leader_write_gap", xs))
        if "heartbeats" not in skip:
            entries = heartbeat_cost(cluster)
            print("1000 unchanged heartbeats: %d log entries" % entries, flush=True)
            out["results"].append({"name": "log_entries_per_1000_unchanged_heartbeats",
                                   "value": entries})
    finally:
        broker.close()
        cluster.cleanup(check=False)
    for r in out["results"]:
        if "p50" in r:
            print("%-34s n=%d p50=%.3f s p99=%.3f s min=%.3f s max=%.3f s" %
                  (r["name"], r["n"], r["p50"], r["p99"], r["min"], r["max"]))
        else:
            print("%-34s %s" % (r["name"], r["value"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
