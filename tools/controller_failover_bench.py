#!/usr/bin/env python3
"""Master failover time of the controller (docs/controller.md §7) on a local 3-node raftns
cluster, with brokers simulated on the wire (tests/process/test_controller.py's CtlBroker): per
trial a fresh group with master B1 and in-sync slave B2, both heartbeating every node once a
second. B1 "dies" (all its connections close, as a SIGKILL of a broker process does) and the
bench records, from that instant: (a) the 1008 reaching B2's listener, (b) 1004 on the leader
showing B2 as master, (c) a route read on a follower showing B2's address with id 0 (B2
re-registers with the name servers as id 0 the moment its 1008 arrives, as a 5.x broker does).
With --with-leader-kill the raftns leader is killed -9 at the same instant. It prints numbers and
asserts nothing.

Usage: RAFTNS_BIN=build/raftns python3 tools/controller_failover_bench.py [--trials 20]
       [--with-leader-kill [--settle-s 11]] [--json FILE]"""

import argparse
import json
import os
import platform
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "process"))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
import test_controller as tc  # noqa: E402


def pct(samples, p):
    s = sorted(samples)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


class Beater(threading.Thread):
    """Heartbeats (oneway) of the given brokers to every live node once a second."""

    def __init__(self, cluster, brokers):
        super().__init__(daemon=True)
        self.cluster, self.brokers = cluster, brokers
        self.stopping = threading.Event()
        self.lock = threading.Lock()

    def run(self):
        while not self.stopping.wait(1.0):
            with self.lock:
                for b in list(self.brokers):
                    for nd in self.cluster.live():
                        try:
                            b.conn(nd).request(ns.BROKER_HEARTBEAT, b.hb_ext(), oneway=True)
                        except (OSError, ns.ConnectionClosed):
                            b.conns.pop(nd.id, None)


def trial(cluster, k, leader_kill, beater, settle_s):
    name = "broker-%d" % k
    ld = cluster.leader()
    b1, b2 = tc.CtlBroker(cluster, 1), tc.CtlBroker(cluster, 2)
    for b in (b1, b2):
        b.hb_ext_base = b.hb_ext

        def ext(b=b, **kw):
            e = b.hb_ext_base(**kw)
            e["brokerName"] = name
            return e
        b.hb_ext = ext
    names = {"clusterName": "c1", "brokerName": name}

    def admit(b):
        b.id = int(b.request(ld, tc.NEXT_ID, names).ext["nextBrokerId"])
        assert b.request(ld, tc.APPLY_ID, dict(names, appliedBrokerId=str(b.id),
                                               registerCheckCode=b.code)).code == 0
        assert b.request(ld, tc.REGISTER, dict(names, brokerId=str(b.id),
                                               brokerAddress=b.addr)).code == 0
        for nd in cluster.live():
            b.request(nd, ns.BROKER_HEARTBEAT, b.hb_ext())
    admit(b1)
    assert b1.request(ld, tc.ELECT, dict(names, brokerId="1")).code == 0
    admit(b2)
    body = json.dumps({"syncStateSet": [1, 2], "syncStateSetEpoch": 1}).encode()
    assert b1.request(ld, tc.ALTER, {"brokerName": name, "masterBrokerId": "1",
                                     "masterEpoch": "1"}, body).code == 0
    with beater.lock:
        beater.brokers[:] = [b1, b2]
    topic = "T%d" % k
    nb = clusterh.Broker(name=name, addr=b2.addr, topics=[topic, topic + "b"])
    seen = {}

    def on_notify():  # B2 re-registers as id 0 as soon as its 1008 arrives
        while "notify" not in seen:
            # a new leader also re-announces the old master: only B2's own counts
            n = [f for f in b2.listener.notifications()
                 if f.ext.get("masterBrokerId") == str(b2.id)]
            if n:
                seen["notify"] = time.monotonic()
                for nd in cluster.live():
                    try:
                        nb.register(nd, timeout=harness.T(5.0))
                        break
                    except (OSError, ns.ConnectionClosed, TimeoutError):
                        nb.drop(nd)
                return
            time.sleep(0.001)
    watcher = threading.Thread(target=on_notify, daemon=True)
    watcher.start()
    followers = [nd for nd in cluster.live() if nd.id != ld.id]
    t0 = time.monotonic()
    with beater.lock:
        beater.brokers.remove(b1)
    b1.die()
    if leader_kill:
        ld.kill9()
    survivors = cluster.live()
    deadline = t0 + harness.T(60.0)
    master_at = route_at = None
    reader = followers[0]
    while time.monotonic() < deadline and (master_at is None or route_at is None):
        # 1004 on every survivor: the one that leads answers (the others 2007)
        for nd in survivors if master_at is None else ():
            try:
                r = nd.request(tc.REPLICA_INFO, {"brokerName": name}, timeout=harness.T(1.0))
                if r.code == 0 and r.ext.get("masterBrokerId") == str(b2.id):
                    master_at = time.monotonic()
                    break
            except (OSError, ns.ConnectionClosed, TimeoutError):
                pass
        if route_at is None:
            try:
                r = reader.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": topic},
                                   timeout=harness.T(2.0))
                if r.code == 0:
                    addrs = r.body_json()["brokerDatas"][0]["brokerAddrs"]
                    if addrs.get("0", addrs.get(0)) == b2.addr:
                        route_at = time.monotonic()
            except (OSError, ns.ConnectionClosed, TimeoutError, KeyError, IndexError):
                pass
        time.sleep(0.002)
    watcher.join(timeout=1.0)
    with beater.lock:
        beater.brokers[:] = []
    b1.close()
    b2.close()
    nb.close()
    if leader_kill:
        cluster.restart(ld.id)
        cluster.wait_ready()
        # a bench may sleep: a node younger than a broker heartbeat timeout judges no
        # master (docs/controller.md §7), and --settle-s measures the warm case
        time.sleep(settle_s)

    def ms(t):
        return None if t is None else (t - t0) * 1000.0
    return {"notify_ms": ms(seen.get("notify")), "master_ms": ms(master_at),
            "route_ms": ms(route_at)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--with-leader-kill", action="store_true")
    ap.add_argument("--settle-s", type=float, default=0.0,
                    help="after restarting the killed node, wait this long (warm nodes)")
    ap.add_argument("--json")
    a = ap.parse_args()
    # SIGTERM unwinds like an error, so the nodes and temp dirs are cleaned up
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    cluster = clusterh.Cluster(3, namesrv=tc.CONTROLLER_ON)
    cluster.start()
    time.sleep(a.settle_s)  # every node warm before the first trial too
    beater = Beater(cluster, [])
    beater.start()
    results = []
    try:
        for k in range(a.trials):
            results.append(trial(cluster, k, a.with_leader_kill, beater, a.settle_s))
            print("trial %2d: %s" % (k, results[-1]), flush=True)
    finally:
        beater.stopping.set()
        cluster.cleanup(check=False)
    summary = {}
    for key in ("notify_ms", "master_ms", "route_ms"):
        xs = [r[key] for r in results if r[key] is not None]
        summary[key] = {"n": len(xs), "missed": len(results) - len(xs),
                        "p50": pct(xs, 50), "p90": pct(xs, 90), "p99": pct(xs, 99),
                        "max": max(xs or [float("nan")])}
        # with 20 trials the nearest-rank p99 is the slowest trial
        print("%-10s n=%d missed=%d p50=%.1f p90=%.1f p99=%.1f max=%.1f ms" % (
            key, len(xs), len(results) - len(xs), summary[key]["p50"], summary[key]["p90"],
            summary[key]["p99"], summary[key]["max"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"host": platform.node(), "with_leader_kill": a.with_leader_kill,
                       "trials": results, "summary": summary}, f, indent=2)


if __name__ == "__main__":
    main()
