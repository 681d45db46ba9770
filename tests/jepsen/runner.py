"""Entry point of the fault suite: creates the namespaces, starts the cluster, runs the workloads
and the seeded nemesis schedule, heals, waits a quiet period, records convergence, final reads and
the log scan into history.jsonl, then calls checker.py and plot.py. Namespaces and processes are
always removed (finally, atexit, SIGINT/SIGTERM, and a sweep of dead runs at start).
Usage: python3 tests/jepsen/runner.py --bin PATH [--nodes 3] [--time 120] [--nemesis all]
[--seed N] [--out DIR]"""

import argparse
import atexit
import datetime
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import client  # noqa: E402
import harness  # noqa: E402
import nemesis as nem  # noqa: E402
import netns  # noqa: E402
import workload_controller as wlc  # noqa: E402
import workloads as wl  # noqa: E402

SCAN_INTERVAL_MS = 5000
EXPIRY_SLACK_MS = 2000
ELECTION_MS = 1000


def say(msg):
    print("[jepsen %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


class Interrupted(Exception):
    pass


def on_signal(signum, _frame):
    raise Interrupted("signal %d" % signum)


def leader_watch(cluster, rec, stop_ev):
    last = None
    while not stop_ev.wait(0.5):
        best = None
        for nid, st in cluster.statuses().items():
            if st and st.get("role") == "leader" and (best is None or st.get("term", 0) > best[1]):
                best = (nid, st.get("term", 0))
        if best and best != last:
            rec.info("harness", "leader", {"node": "n%d" % best[0], "term": best[1]})
            last = best


def convergence(cluster, timeout=10.0):
    """Samples every member until all agree (then one more sample) or timeout; returns the
    convergence event value and whether it converged."""
    healed = time.monotonic_ns()
    samples, ok = [], False
    deadline = time.monotonic() + harness.T(timeout)
    while True:
        nodes = {}
        for nd in cluster.member_nodes():
            try:
                st = nd.status()
            except OSError:
                st = None
            bodies = client.table_bodies(nd.client_addr)
            if st is None or bodies is None:
                nodes["n%d" % nd.id] = None
                continue
            nodes["n%d" % nd.id] = {
                "applied_index": st.get("applied_index"), "digest": st.get("digest"),
                "digest_index": st.get("digest_index", 0),
                "diverged": bool(st.get("diverged")), "ready": st.get("ready"),
                "table_hash": hashlib.sha256(bodies[0] + b"\0" + bodies[1]).hexdigest()[:16]}
        samples.append({"time": time.monotonic_ns(), "nodes": nodes})
        vals = list(nodes.values())
        ok = (None not in vals and len({(v["applied_index"], v["digest"], v["table_hash"])
                                        for v in vals}) == 1
              and not any(v["diverged"] for v in vals))
        if ok or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    return {"healed_time": healed, "samples": samples[-50:], "converged": ok}, ok


MEMBER_KEYS = ("id", "raft", "client", "http", "role")


def final_tables(cluster, kv_keys, timeout=10.0):
    """Every table of every member, read when all of them report one applied index before and
    after their reads (same index => same state => same bytes): the "final-tables" event value.
    Retries until such a round happens or the (scaled) timeout passes."""
    deadline = time.monotonic() + harness.T(timeout)
    nodes = cluster.member_nodes()
    last = None
    while True:
        before = cluster.statuses(nodes)
        topics = set()
        for nd in nodes:
            t = client.table_set(nd.client_addr, (), ())
            topics.update((t or {}).get("_topics", []))
        tables = {}
        for nd in nodes:
            t = client.table_set(nd.client_addr, topics, kv_keys)
            st = before.get(nd.id)
            if t is not None and st is not None:
                t.pop("_topics", None)
                t["members"] = hashlib.sha256(json.dumps(sorted(
                    [{k: m.get(k) for k in MEMBER_KEYS} for m in st.get("members") or []],
                    key=lambda m: m.get("id") or 0), sort_keys=True).encode()).hexdigest()[:16]
                if st.get("controller") is not None:
                    # the replicated part of the node's controller table (docs/controller.md
                    # §4); heartbeats and counters are node-local and left out
                    t["ctl"] = hashlib.sha256(json.dumps(
                        st["controller"].get("groups") or [], sort_keys=True).encode()
                    ).hexdigest()[:16]
                    t["ctl_groups"] = len(st["controller"].get("groups") or [])
            tables["n%d" % nd.id] = t
        after = cluster.statuses(nodes)
        idx = {st.get("applied_index") if st else None
               for st in list(before.values()) + list(after.values())}
        stable = len(idx) == 1 and None not in idx and None not in tables.values()
        last = {"stable": stable, "applied_index": sorted(idx, key=str), "topics": len(topics),
                "nodes": tables}
        if stable or time.monotonic() >= deadline:
            return last
        time.sleep(0.2)


def final_reads(cluster, rec):
    for workload in ("broker-set", "liveness"):
        p = wl.Proc(rec, workload)
        for nd in cluster.member_nodes():
            p.op("final-read", {}, nd.id, lambda: client.cluster_info(nd.client_addr))


def run_checker(run_dir):
    hist = os.path.join(run_dir, "history.jsonl")
    checker = os.path.join(HERE, "checker.py")
    plot = os.path.join(HERE, "plot.py")
    rc = None
    if os.path.exists(checker):
        p = subprocess.run([sys.executable, checker, hist, "--out",
                            os.path.join(run_dir, "results.json")])
        rc = p.returncode
    else:
        say("checker.py missing: no verdict")
    if os.path.exists(plot):
        p = subprocess.run([sys.executable, plot, hist, os.path.join(run_dir, "timeline.png")],
                           capture_output=True, text=True)
        if p.returncode != 0:
            say("plot failed: %s" % (p.stderr or p.stdout).strip()[-500:])
    return rc


def main():
    ap = argparse.ArgumentParser(description="raftns fault suite (run as root)")
    ap.add_argument("--bin", required=True)
    ap.add_argument("--ctl", default=None, help="raftnsctl (default: next to --bin)")
    ap.add_argument("--nodes", type=int, default=3, choices=(1, 3, 5),
                    help="3 or 5 (1: development mode without --config)")
    ap.add_argument("--time", type=float, default=120, help="seconds of faults")
    ap.add_argument("--nemesis", default="all")
    ap.add_argument("--workloads", default="broker-set,kv,route,liveness")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--warmup", type=float, default=10)
    ap.add_argument("--quiet", type=float, default=25)
    ap.add_argument("--out", default=os.path.join(HERE, "runs"))
    ap.add_argument("--allow-nemesis-failure", default="",
                    help="fault kinds (comma list) allowed not to be carried out")
    args = ap.parse_args()

    why = netns.available()
    if why:
        say("cannot run: %s" % why)
        return 77
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    rng = random.Random(seed)
    families = nem.parse_nemesis(args.nemesis)
    sched = nem.make_schedule(rng, families, args.time, args.warmup, args.nodes)
    faketime_node = rng.randrange(1, args.nodes + 1) if "clock" in families else None
    say("seed %d: %d nodes, nemesis %s, %d faults over %.0fs (rerun with --seed %d)" % (
        seed, args.nodes, ",".join(families) or "none", len(sched), args.time, seed))
    print(nem.format_schedule(sched), flush=True)

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = os.path.abspath(os.path.join(args.out, "%s-seed%d" % (stamp, seed)))
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, "schedule.json"), "w") as f:
        json.dump({"seed": seed, "args": vars(args), "schedule": sched}, f, indent=1)

    netns.sweep(say)
    net = netns.Net(args.nodes + 1, log=say)
    state = {"cluster": None, "cleaned": False}

    def cleanup():
        if state["cleaned"]:
            return
        state["cleaned"] = True
        # a second Ctrl-C must not abort the cleanup half way
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        if state["cluster"] is not None:
            state["cluster"].kill_all()
        net.destroy()
        shutil.rmtree(os.path.join(run_dir, "data"), ignore_errors=True)  # logs are kept

    atexit.register(cleanup)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    rec = None
    verdict = None
    try:
        net.create()
        net.enter_client()  # every client thread (and HTTP poll) lives in the client namespace
        net.wait_reachable()
        names = [w.strip() for w in args.workloads.split(",") if w.strip()]
        cluster = harness.Cluster(net, args.bin, run_dir, args.nodes, spares=0,
                                  faketime_node=faketime_node, election_ms=ELECTION_MS, log=say,
                                  single=args.nodes == 1,
                                  namesrv=wlc.SETTINGS if "controller" in names else None)
        state["cluster"] = cluster
        rec = wl.Recorder(os.path.join(run_dir, "history.jsonl"))
        cluster.rec = rec
        ctl = {}
        if "controller" in names:
            ctl = {"controller_settings": wlc.SETTINGS, "ctl_unclean": False,
                   "ctl_heartbeat_timeout_ms": wlc.HEARTBEAT_TIMEOUT_MS,
                   "ctl_failover_bound_ms": wlc.failover_bound_ms(ELECTION_MS),
                   "ctl_warm_ms": wlc.WARM_MS}
        rec.info("harness", "config", dict(ctl, **{
            "nodes": ["n%d" % i for i in sorted(cluster.members)], "seed": seed,
            "scan_interval_ms": SCAN_INTERVAL_MS, "broker_timeout_ms": 30000,
            "election_timeout_ms": ELECTION_MS, "expiry_slack_ms": EXPIRY_SLACK_MS,
            "scale": harness.SCALE, "report_recovery_ms": 5000,
            "nemesis": families, "workloads": names, "time_s": args.time,
            "faketime_node": faketime_node, "schedule": sched}))
        cluster.start_all()
        stop_exits = threading.Event()
        exits = threading.Thread(target=cluster.watch_exits, args=(stop_exits,), daemon=True)
        exits.start()
        if not cluster.wait_ready(60):
            raise RuntimeError("cluster not ready within 60 s: %r" % cluster.statuses())
        say("cluster ready, leader n%s" % cluster.leader())
        stop_watch = threading.Event()
        watcher = threading.Thread(target=leader_watch, args=(cluster, rec, stop_watch),
                                   daemon=True)
        watcher.start()
        loads = wl.Workloads(cluster, rec, rng, names=names)
        loads.start()
        if loads.controller is not None:
            # the first 40 % of the quiet period still has broker deaths (no raftns fault)
            loads.controller.quiet_deaths_s = 0.4 * args.quiet
        nemesis = nem.Nemesis(cluster, rec, ctl_bin=args.ctl or os.path.join(
            os.path.dirname(args.bin), "raftnsctl"), log=say,
            allow_failed=[k for k in args.allow_nemesis_failure.split(",") if k])
        t0 = time.monotonic()
        for item in sched:
            wait = t0 + item["at"] - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            say("fault %s for %.1fs" % (item["kind"], item["duration"]))
            nemesis.run(item)
        left = t0 + args.warmup + args.time - time.monotonic()
        if left > 0:
            time.sleep(left)
        nemesis.heal_all()
        rec.info("harness", "heal")
        loads.quiet_ev.set()
        say("healed; quiet period %.0fs" % args.quiet)
        time.sleep(args.quiet)
        done = threading.Event()
        if loads.controller is not None:
            # live controller brokers keep beating through the final tables (else they
            # expire and the leader elects while the tables are read)
            threading.Thread(target=loads.controller.beat_until, args=(done.is_set,),
                             daemon=True).start()
        loads.stop()
        hb = threading.Thread(target=loads.heartbeat_live, args=(done.is_set,), daemon=True)
        hb.start()
        conv, ok = convergence(cluster)
        rec.info("harness", "convergence", conv)
        say("convergence: %s" % ("ok" if ok else "NOT converged: %s" % json.dumps(
            conv["samples"][-1]["nodes"])))
        final_reads(cluster, rec)
        ft = final_tables(cluster, loads.kv_keys)
        rec.info("harness", "final-tables", ft)
        say("final tables: %s, %d topics" % ("stable" if ft["stable"] else "NOT stable",
                                             ft["topics"]))
        done.set()
        hb.join(30)
        loads.close_silent()
        stop_watch.set()
        cluster.stop_all()
        stop_exits.set()
        exits.join(5)
        cluster.reap_all()
        problems = [{"node": "n%s" % k, "line": line}
                    for k, lines in cluster.scan_logs().items() for line in lines]
        rec.info("harness", "log-scan", {"files": len(cluster.nodes), "problems": problems})
        rec.close()
        rec = None
        cleanup()
        verdict = run_checker(run_dir)
    except Interrupted as e:
        say("interrupted (%s): cleaning up" % e)
        return 130
    finally:
        if rec is not None:
            rec.close()
        cleanup()
        say("run dir %s" % run_dir)
    if verdict is None:
        return 3
    say("verdict: %s (exit %d)" % ("VALID" if verdict == 0 else "INVALID", verdict))
    return verdict


if __name__ == "__main__":
    sys.exit(main())
