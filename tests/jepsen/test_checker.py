#!/usr/bin/env python3
"""Self-test of the fault-suite checker: known-bad histories are rejected by the right check,
known-good and generated linearizable ones are accepted.

It tests checker.py, checker_kv.py and history.py only; it starts no raftns process.
"""

import glob
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import checker  # noqa: E402
import checker_kv  # noqa: E402
from history import HistoryError, pair_ops, parse_lines, read_history, write_history  # noqa: E402

FIXTURES = os.path.join(HERE, "fixtures")


def fixtures(kind):
    """(path, check) for fixtures named KIND__CHECK__what.jsonl."""
    out = []
    for path in sorted(glob.glob(os.path.join(FIXTURES, kind + "__*.jsonl"))):
        out.append((path, os.path.basename(path).split("__")[1]))
    return out


def run_check(events, name):
    return checker.check_events(events, want={name})["checks"][name]


class FixtureTest(unittest.TestCase):
    def test_fixtures_exist(self):
        checks = set(c for _, c in fixtures("bad"))
        self.assertEqual(checks, {"broker-set", "kv-linearizable", "route-reads", "liveness",
                                  "convergence", "final-tables", "nodes"})
        self.assertEqual(set(c for _, c in fixtures("good")), checks)

    def test_bad_rejected_by_their_check(self):
        for path, name in fixtures("bad"):
            with self.subTest(path=os.path.basename(path)):
                r = run_check(read_history(path), name)
                self.assertIs(r["valid"], False, r)
                self.assertTrue(r["errors"], r)

    def test_good_accepted(self):
        for path, name in fixtures("good"):
            with self.subTest(path=os.path.basename(path)):
                r = run_check(read_history(path), name)
                self.assertIs(r["valid"], True, r)
                self.assertGreater(r["counts"]["checked"], 0, r)

    def test_good_fixtures_pass_every_other_check(self):
        # A good fixture of one workload must not trip another check (convergence aside).
        for path, _ in fixtures("good"):
            with self.subTest(path=os.path.basename(path)):
                res = checker.check_events(read_history(path))
                for name, r in res["checks"].items():
                    if name in ("convergence", "final-tables"):
                        continue  # need their harness events
                    if r["valid"] == "unknown":  # a check this workload gives nothing to check
                        self.assertEqual(r["errors"][0]["kind"], "nothing-checked", (name, r))
                        self.assertFalse(r["counts"].get("checked"), (name, r))
                    else:
                        self.assertIs(r["valid"], True, (name, r))

    def test_error_kinds(self):
        want = {"bad__broker-set__lost.jsonl": "lost",
                "bad__broker-set__resurrected.jsonl": "resurrected",
                "bad__route-reads__went-back.jsonl": "went-back",
                "bad__route-reads__phantom.jsonl": "phantom",
                "bad__liveness__expired-while-heartbeating.jsonl": "expired-while-alive",
                "bad__liveness__never-gone.jsonl": "not-gone",
                "bad__convergence__diverged.jsonl": "diverged"}
        for base, kind in want.items():
            path = os.path.join(FIXTURES, base)
            name = base.split("__")[1]
            r = run_check(read_history(path), name)
            self.assertIn(kind, [e.get("kind") for e in r["errors"]], (base, r))


# ---------------------------------------------------------------- generated KV histories


def gen_register_history(seed, n_ops=200, key="k", info_rate=0.1, fail_rate=0.05,
                         max_overlap=40, initial_time=0):
    """A linearizable history from a simulated register: each op takes effect at a distinct
    linearization point inside [invoke, complete]. Info writes may or may not take effect."""
    rng = random.Random(seed)
    state = None
    ops = []
    t = initial_time
    counter = 0
    for _ in range(n_ops):
        t += rng.randint(1, 10)
        lin = t
        start = lin - rng.randint(0, max_overlap)
        end = lin + rng.randint(0, max_overlap)
        r = rng.random()
        if r < 0.4:
            counter += 1
            kind, arg = "write", "v%d" % counter
        elif r < 0.5:
            kind, arg = "delete", None
        else:
            kind, arg = "read", None
        outcome = "ok"
        x = rng.random()
        if x < info_rate:
            outcome = "info"
        elif x < info_rate + fail_rate and kind != "read":
            outcome = "fail"
        applied = outcome == "ok" or (outcome == "info" and rng.random() < 0.5)
        res = None
        if kind == "read":
            res = state
        elif applied and kind == "write":
            state = arg
        elif applied and kind == "delete":
            state = None
        ops.append({"kind": kind, "arg": arg, "res": res, "start": start, "end": end,
                    "outcome": outcome})
    return ops, rng


def to_events(ops, key="k"):
    """Assigns ops to processes (one open op each) and returns ordered history events."""
    free_at = []
    raw = []
    for o in sorted(ops, key=lambda o: o["start"]):
        p = None
        for i, busy_until in enumerate(free_at):
            if busy_until < o["start"]:
                p = i
                break
        if p is None:
            p = len(free_at)
            free_at.append(0)
        free_at[p] = o["end"] + 1 if o["outcome"] != "info" else float("inf")
        if o["outcome"] == "info":
            # The client gave up; the process is never reused (like a crashed client).
            free_at[p] = float("inf")
        inv_v = {"key": key}
        if o["kind"] == "write":
            inv_v["value"] = o["arg"]
        raw.append((o["start"], 0, {"process": p, "type": "invoke", "f": o["kind"],
                                    "value": inv_v, "node": "n1", "workload": "kv"}))
        done_v = {"key": key, "value": o["res"]} if o["kind"] == "read" else inv_v
        raw.append((o["end"], 1, {"process": p, "type": o["outcome"], "f": o["kind"],
                                  "value": done_v, "node": "n1", "workload": "kv"}))
    raw.sort(key=lambda x: (x[0], x[1]))
    events = []
    for tm, _, ev in raw:
        ev["time"] = tm
        ev["index"] = len(events)
        events.append(ev)
    return events


def visible_flip(ops, rng):
    """Changes one ok read to a value it cannot legally see; returns False if none found."""
    reads = [o for o in ops if o["kind"] == "read" and o["outcome"] == "ok"]
    rng.shuffle(reads)
    for rd in reads:
        if rng.random() < 0.5:
            rd["res"] = "never-written"
            return True
        # A value overwritten before the read began: write w1 then a write/delete w2, both
        # complete, w2 starting after w1 ended, w2 ending before the read starts.
        for w1 in ops:
            if w1["kind"] != "write" or w1["outcome"] == "fail" or w1["res"] is not None:
                continue
            if w1["outcome"] == "info" or w1["end"] >= rd["start"]:
                continue
            for w2 in ops:
                if w2["kind"] in ("write", "delete") and w2["outcome"] == "ok" and \
                        w2["start"] > w1["end"] and w2["end"] < rd["start"] and \
                        rd["res"] != w1["arg"]:
                    rd["res"] = w1["arg"]
                    return True
    return False


class KvTest(unittest.TestCase):
    def check(self, events):
        ops, problems = pair_ops(events)
        self.assertEqual(problems, [])
        return checker_kv.check(ops)

    def test_generated_linearizable_accepted(self):
        for seed in range(60):
            with self.subTest(seed=seed):
                ops, _ = gen_register_history(seed, n_ops=150)
                r = self.check(to_events(ops))
                self.assertIs(r["valid"], True, r)

    def test_generated_flip_rejected(self):
        rejected = 0
        for seed in range(60):
            with self.subTest(seed=seed):
                ops, rng = gen_register_history(seed, n_ops=150)
                if not visible_flip(ops, rng):
                    continue
                r = self.check(to_events(ops))
                self.assertIs(r["valid"], False, r)
                rejected += 1
        self.assertGreater(rejected, 40)

    def test_large_history_within_seconds(self):
        import time
        ops, _ = gen_register_history(12345, n_ops=3000, info_rate=0.05, max_overlap=60)
        t0 = time.monotonic()
        r = self.check(to_events(ops))
        self.assertIs(r["valid"], True, r)
        self.assertLess(time.monotonic() - t0, 20.0)

    def test_cap_gives_unknown_not_invalid(self):
        ops, _ = gen_register_history(7, n_ops=300, max_overlap=200)
        kops, _ = pair_ops(to_events(ops))
        r = checker_kv.check(kops, max_steps=10)
        self.assertEqual(r["valid"], "unknown")
        res = checker.check_events(to_events(ops), max_steps=10, want={"kv-linearizable"})
        self.assertEqual(checker.exit_code(res), 2)

    def test_info_write_may_apply_late(self):
        # An info write can take effect long after the client gave up.
        ops = [{"kind": "write", "arg": "a", "res": None, "start": 0, "end": 5, "outcome": "info"},
               {"kind": "read", "arg": None, "res": None, "start": 10, "end": 11, "outcome": "ok"},
               {"kind": "read", "arg": None, "res": "a", "start": 20, "end": 21, "outcome": "ok"}]
        self.assertIs(self.check(to_events(ops))["valid"], True)
        ops[2]["outcome"] = "ok"
        ops[0]["outcome"] = "fail"
        self.assertIs(self.check(to_events(ops))["valid"], False)

    def test_keys_independent(self):
        a, _ = gen_register_history(1, n_ops=50)
        b, rng = gen_register_history(2, n_ops=50)
        ea = to_events(a, key="x")
        self.assertTrue(visible_flip(b, rng))
        eb = to_events(b, key="y")
        for ev in eb:
            ev["process"] += 1000
        events = sorted(ea + eb, key=lambda e: e["time"])
        for i, ev in enumerate(events):
            ev["index"] = i
        r = self.check(events)
        self.assertIs(r["valid"], False)
        self.assertEqual([e["key"] for e in r["errors"]], ["y"])


# ---------------------------------------------------------------- format and CLI


class FormatTest(unittest.TestCase):
    def test_bad_lines_rejected(self):
        for line in ['{"process":1', '[1,2]', '{"process":1,"type":"done","f":"x","time":1}',
                     '{"process":1,"type":"ok","f":"x"}']:
            with self.subTest(line=line):
                with self.assertRaises(HistoryError):
                    parse_lines([line])

    def test_pairing_problems_reported(self):
        evs = parse_lines([
            '{"process":1,"type":"ok","f":"read","time":1}',
            '{"process":2,"type":"invoke","f":"read","time":2}',
            '{"process":2,"type":"invoke","f":"read","time":3}',
            '{"process":3,"type":"invoke","f":"read","time":1}'])
        ops, problems = pair_ops(evs)
        self.assertEqual(len(problems), 3, problems)
        self.assertEqual(ops[-1].type, "info")  # never completed
        r = checker.check_events(evs, want={"format"})
        self.assertIs(r["valid"], False)

    def test_round_trip_and_cli(self):
        path = os.path.join(FIXTURES, "bad__broker-set__lost.jsonl")
        evs = read_history(path)
        with tempfile.TemporaryDirectory() as d:
            copy = os.path.join(d, "history.jsonl")
            write_history(copy, evs)
            self.assertEqual([{k: v for k, v in e.items()} for e in read_history(copy)], evs)
            p = subprocess.run([sys.executable, os.path.join(HERE, "checker.py"), copy],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("INVALID", p.stdout)
            with open(os.path.join(d, "results.json")) as f:
                res = json.load(f)
            self.assertIs(res["checks"]["broker-set"]["valid"], False)
            self.assertEqual(res["checks"]["broker-set"]["counts"]["lost"], 2)  # b1, two nodes

    def test_cli_partial_run_is_unknown(self):
        # Checks with nothing to check (no kv, no route reads, no node exits) are not VALID.
        evs = read_history(os.path.join(FIXTURES, "good__broker-set__concurrent.jsonl"))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "history.jsonl")
            write_history(path, evs)
            p = subprocess.run([sys.executable, os.path.join(HERE, "checker.py"), path,
                                "--out", os.path.join(d, "r.json")],
                               capture_output=True, text=True, timeout=60)
            self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("nothing-checked", p.stdout)

    def test_cli_valid_run_exits_zero(self):
        # A whole run: good broker-set workload + convergence events.
        evs = read_history(os.path.join(FIXTURES, "good__broker-set__concurrent.jsonl"))
        evs += read_history(os.path.join(FIXTURES, "good__convergence__healed.jsonl"))[1:]
        t = 0
        for i, ev in enumerate(evs):
            t = max(t, ev["time"])
            ev["time"] = t
            ev["index"] = i
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "history.jsonl")
            write_history(path, evs)
            p = subprocess.run([sys.executable, os.path.join(HERE, "checker.py"), path,
                                "--out", os.path.join(d, "r.json"), "--only", "broker-set",
                                "--only", "convergence"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("VALID", p.stdout)


# ---------------------------------------------------------------- checks of the mutant table

S = 1_000_000_000  # ns per second


class H:
    """A tiny history builder: ops are invoke/complete pairs with explicit times (seconds)."""

    def __init__(self, **cfg):
        c = {"nodes": ["n1", "n2", "n3"], "scan_interval_ms": 5000, "broker_timeout_ms": 10000,
             "expiry_slack_ms": 2000, "election_timeout_ms": 1000}
        c.update(cfg)
        self.raw = [(0, {"process": "harness", "type": "info", "f": "config", "value": c})]
        self.next_p = 1

    def op(self, t0, t1, f, value, node="n1", workload="liveness", type_="ok", result=None,
           error=None, served_by=None):
        p = self.next_p
        self.next_p += 1
        self.raw.append((t0 * S, {"process": p, "type": "invoke", "f": f, "value": value,
                                  "node": node, "workload": workload}))
        done = {"process": p, "type": type_, "f": f, "node": node, "workload": workload,
                "value": result if result is not None else value}
        if error:
            done["error"] = error
        if served_by is not None:
            done["served_by"] = served_by
        self.raw.append((t1 * S, done))
        return self

    def hb(self, broker, t0, t1, step=1.0, node="n1", pinned=False, **kw):
        t = t0
        v = {"broker": broker, "timeout_ms": 10000}
        if pinned:
            v["pinned"] = node
        while t <= t1:
            self.op(t, t + 0.05, "heartbeat", dict(v), node=node, **kw)
            t += step
        return self

    def read(self, t, brokers, consistent=True, node="n2", workload="liveness", f="read",
             served_by=None):
        v = {} if f == "final-read" else {"consistent": consistent}
        return self.op(t, t + 0.05, f, v, node=node, workload=workload, result=sorted(brokers),
                       served_by=served_by)

    def info(self, t, process, f, value=None):
        ev = {"process": process, "type": "info", "f": f}
        if value is not None:
            ev["value"] = value
        self.raw.append((t * S, ev))
        return self

    def events(self):
        out = []
        for i, (t, ev) in enumerate(sorted(self.raw, key=lambda x: x[0])):
            ev = dict(ev, time=int(t), index=i)
            out.append(ev)
        return out

    def check(self, name):
        return checker.check_events(self.events(), want={name})["checks"][name]


class MutantChecksTest(unittest.TestCase):
    def assertKind(self, r, kind):
        self.assertIs(r["valid"], False, r)
        self.assertIn(kind, [e.get("kind") for e in r["errors"]], r)

    # -- node exits (crash-once) and nemesis steps
    def nodes_history(self, rc, cause, expected):
        h = H()
        h.info(0, "harness", "node-start", {"node": "n2", "pid": 7})
        h.info(5, "harness", "exit", {"node": "n2", "pid": 7, "rc": rc, "cause": cause,
                                      "expected": expected})
        h.info(6, "harness", "node-start", {"node": "n2", "pid": 8})
        h.info(9, "harness", "exit", {"node": "n2", "pid": 8, "rc": 0, "cause": "stop",
                                      "expected": True})
        return h

    def test_unexpected_exit_rejected_even_when_restarted(self):
        self.assertKind(self.nodes_history(-11, None, False).check("nodes"), "unexpected-exit")
        self.assertKind(self.nodes_history(1, "stop", False).check("nodes"), "unexpected-exit")
        r = self.nodes_history(-9, "nemesis-kill", True).check("nodes")
        self.assertIs(r["valid"], True, r)

    def test_start_without_exit_rejected(self):
        h = self.nodes_history(-9, "nemesis-kill", True)
        h.info(10, "harness", "node-start", {"node": "n3", "pid": 9})
        self.assertKind(h.check("nodes"), "no-exit-recorded")

    def test_nemesis_failure_rejected_unless_expected(self):
        h = self.nodes_history(-9, "nemesis-kill", True)
        h.info(3, "nemesis", "nemesis-failed", {"kind": "member-cycle", "step": "member remove",
                                                "why": "exit 1", "expected": False})
        self.assertKind(h.check("nodes"), "nemesis-failed")
        h = self.nodes_history(-9, "nemesis-kill", True)
        h.info(3, "nemesis", "nemesis-failed", {"kind": "member-cycle", "step": "member remove",
                                                "why": "exit 1", "expected": True})
        self.assertIs(h.check("nodes")["valid"], True)

    def test_nothing_checked_is_not_valid(self):
        r = H().check("nodes")
        self.assertEqual(r["valid"], "unknown", r)
        r = H().check("liveness")
        self.assertEqual(r["valid"], "unknown", r)
        res = checker.check_events(H().events(), want={"liveness"})
        self.assertEqual(checker.exit_code(res), 2)

    # -- final tables (apply-twice, ack-before-commit)
    def tables(self, n3_kv, stable=True):
        t = {"106": "0:aa", "206": "0:bb", "105:t1": "0:cc", "101:k0": "0:dd", "members": "ee"}
        nodes = {"n1": dict(t), "n2": dict(t), "n3": dict(t, **{"101:k0": n3_kv})}
        return H().info(1, "harness", "final-tables", {"stable": stable, "applied_index": [9],
                                                       "topics": 1, "nodes": nodes})

    def test_final_tables_byte_for_byte(self):
        self.assertIs(self.tables("0:dd").check("final-tables")["valid"], True)
        r = self.tables("0:d0").check("final-tables")
        self.assertKind(r, "table-mismatch")
        self.assertEqual(r["errors"][0]["table"], "101:k0")
        self.assertKind(self.tables("0:dd", stable=False).check("final-tables"), "not-stable")
        self.assertKind(H().check("final-tables"), "missing")

    def test_final_tables_node_missing(self):
        h = self.tables("0:dd")
        h.raw[-1][1]["value"]["nodes"]["n3"] = None
        self.assertKind(h.check("final-tables"), "no-answer")

    # -- lost registrations in every consistent read (not only final ones)
    def test_lost_in_mid_run_consistent_read(self):
        h = H().hb("b1", 0, 20, node="n1", workload="broker-set")
        h.read(10.5, ["b1"], workload="broker-set")
        self.assertIs(h.check("broker-set")["valid"], True)
        h = H().hb("b1", 0, 20, node="n1", workload="broker-set")
        h.read(10.5, [], workload="broker-set")
        self.assertKind(h.check("broker-set"), "lost")

    def dropped(self, via=("n3",)):
        """b1 registered over the nodes in via, then its heartbeat over n3 times out at 16 s
        (the client closes that connection); a consistent read at 17 s misses b1."""
        h = H()
        for i, node in enumerate(via):
            h.op(i, i + 0.05, "heartbeat", {"broker": "b1", "timeout_ms": 30000}, node=node,
                 workload="broker-set")
        h.op(10, 16, "heartbeat", {"broker": "b1", "timeout_ms": 30000}, node="n3",
             workload="broker-set", type_="info", error="timeout: timed out")
        return h.read(5, ["b1"], workload="broker-set").read(17, [], workload="broker-set")

    def test_dropping_every_registering_connection_excuses_a_missing_broker(self):
        # the fast path: its only registering connection closed, the leader may expire it
        self.assertIs(self.dropped().check("broker-set")["valid"], True)
        # its connection to n1 still open: it must still be there
        self.assertKind(self.dropped(via=("n1", "n3")).check("broker-set"), "lost")
        # registered over n1 and then over a new connection to n1 after a drop: n1 is open
        h = self.dropped()
        h.op(1, 2, "heartbeat", {"broker": "b1", "timeout_ms": 30000}, node="n1",
             workload="broker-set", type_="info", error="transport: connection reset")
        h.op(3, 3.05, "heartbeat", {"broker": "b1", "timeout_ms": 30000}, node="n1",
             workload="broker-set")
        self.assertKind(h.check("broker-set"), "lost")

    # -- read-your-writes on the acknowledging node (ack-before-apply, stale-reads)
    def test_plain_read_on_acking_node_must_show_the_write(self):
        h = H().op(0, 0.1, "register", {"broker": "b1", "timeout_ms": 10000}, node="n2",
                   workload="broker-set")
        h.read(0.2, [], consistent=False, node="n3", workload="broker-set")  # another node
        self.assertEqual(h.check("broker-set")["counts"]["lost"], 0)
        h.read(0.2, [], consistent=False, node="n2", workload="route")
        self.assertKind(h.check("broker-set"), "lost-ryw")

    # -- a restarted node answering itself before it caught up (stale-reads)
    def restarted(self, read_brokers, served_by=None, reg_at=1.0, unreg_at=None):
        """n3 killed at 0.5 and spawned again at 2.0 (event recorded at 2.01); b1 registered on
        n1 at reg_at; a plain read of n3 at 2.5."""
        h = H()
        for n in ("n1", "n2", "n3"):
            h.info(0, "harness", "node-start", {"node": n, "pid": 1, "spawn_time": 0})
        h.info(0.5, "nemesis", "kill", {"node": "n3"})
        h.info(2.01, "harness", "node-start", {"node": "n3", "pid": 2, "spawn_time": 2 * S})
        h.info(2.02, "nemesis", "restart", {"node": "n3"})
        h.op(reg_at, reg_at + 0.1, "register", {"broker": "b1", "timeout_ms": 10000},
             node="n1", workload="broker-set")
        if unreg_at is not None:
            h.op(unreg_at, unreg_at + 0.1, "unregister", {"broker": "b1"}, node="n1",
                 workload="broker-set")
        return h.read(2.5, read_brokers, consistent=False, node="n3", workload="route",
                      served_by=served_by)

    def test_self_answered_read_after_restart_shows_writes_acked_before_it(self):
        r = self.restarted([]).check("broker-set")
        self.assertKind(r, "lost-after-restart")
        self.assertEqual(r["counts"]["lost_after_restart"], 1, r)
        self.assertEqual(r["counts"]["lost_ryw"], 0, r)  # not read-your-writes: n1 acked it
        self.assertIs(self.restarted(["b1"]).check("broker-set")["valid"], True)

    def test_restart_rule_exceptions(self):
        def lost(h):
            return h.check("broker-set")["counts"]["lost"]
        # forwarded to the leader: judged by read-your-writes of n3 only
        self.assertEqual(lost(self.restarted([], served_by="1")), 0)
        # acknowledged after n3 was spawned: n3 may have been ready before it was applied
        self.assertEqual(lost(self.restarted([], reg_at=2.05)), 0)
        # removal invoked before the read ended
        self.assertEqual(lost(self.restarted([], unreg_at=2.3)), 0)
        # the cut-off is spawn_time, not the event's (later) time: an ack completed between
        # the two is not required
        self.assertEqual(lost(self.restarted([], reg_at=1.905)), 0)
        self.assertEqual(lost(self.restarted([], reg_at=1.895)), 1)

    # -- must-be-gone deadline (slow-expiry)
    def stopped(self, at, events=()):
        h = H().hb("b1", 0, 5, workload="liveness").read(3, ["b1"])  # checked while alive
        h.info(5.1, "harness", "stop-heartbeat", {"broker": "b1"})
        for t, proc, f in events:
            h.info(t, proc, f, {"node": "n1"})
        h.read(at, ["b1"])
        return h

    def test_deadline_not_moved_by_non_leader_faults(self):
        # last heard 5.05 s; deadline 5.05 + 10 + 5 + 2 = 22.05 s
        self.assertIs(self.stopped(21).check("liveness")["valid"], True)
        self.assertKind(self.stopped(23).check("liveness"), "not-gone")
        self.assertKind(self.stopped(23, [(8, "nemesis", "pause"), (11, "nemesis", "resume"),
                                          (12, "harness", "heal")]).check("liveness"),
                        "not-gone")
        # an observed leader change at 20 s grants a new timeout: 20 + 17 = 37 s
        r = self.stopped(30, [(20, "harness", "leader")]).check("liveness")
        self.assertIs(r["valid"], True, r)
        self.assertKind(self.stopped(38, [(20, "harness", "leader")]).check("liveness"),
                        "not-gone")

    def leaderless(self, read_at, victim="n1", successor_at=30):
        """b1 last heard 5.05 s (deadline 22.05 s); n1 observed leader at 1 s; `victim` killed
        at 15 s and restarted at 28 s; n2 observed leader at `successor_at`."""
        h = self.stopped(read_at)
        h.info(1, "harness", "leader", {"node": "n1"})
        h.info(15, "nemesis", "kill", {"node": victim})
        h.info(28, "nemesis", "restart", {"node": victim})
        h.info(successor_at, "harness", "leader", {"node": "n2"})
        return h.check("liveness")

    def test_deadline_in_a_leaderless_window_moves_to_the_successor(self):
        # the leader died before the deadline: nobody could expire b1 until n2 took over at
        # 30 s, which grants a full timeout: 30 + 17 = 47 s
        r = self.leaderless(40)
        self.assertIs(r["valid"], True, r)
        self.assertKind(self.leaderless(48), "not-gone")
        # a follower's death leaves the leader able to expire: nothing moves
        self.assertKind(self.leaderless(23, victim="n3"), "not-gone")
        # a successor observed before the deadline is an ordinary leader change: 20 + 17 = 37 s
        self.assertIs(self.leaderless(36, successor_at=20)["valid"], True)
        self.assertKind(self.leaderless(38, successor_at=20), "not-gone")

    def test_slack_scales_with_the_harness_scale(self):
        h = self.stopped(23)
        h.raw[0][1]["value"]["scale"] = 3  # slack 6 s: deadline 26.05 s
        self.assertIs(h.check("liveness")["valid"], True)
        h = self.stopped(27)
        h.raw[0][1]["value"]["scale"] = 3
        self.assertKind(h.check("liveness"), "not-gone")

    # -- pinned brokers (ignore-reports, no-grace)
    def test_pinned_broker_expired_while_alive(self):
        h = H().hb("p1", 0, 30, node="n2", pinned=True).read(2, ["p1"], node="n1")
        h.read(15, [], node="n1")
        self.assertKind(h.check("liveness"), "expired-while-alive")

    def test_pinned_broker_cut_off_by_a_fault_may_expire(self):
        # n2 partitioned 5..25 s: its locally answered heartbeats reach no leader.
        h = H().hb("p1", 0, 30, node="n2", pinned=True).read(2, ["p1"], node="n1")
        h.info(5, "nemesis", "start-partition", {"kind": "isolate", "desc": "n2 | n1 n3"})
        h.info(25, "nemesis", "stop-partition", {"kind": "isolate"})
        h.read(16, [], node="n1")
        self.assertIs(h.check("liveness")["valid"], True)
        # a broker heartbeating every node is heard by the majority side throughout
        h = H().hb("b1", 0, 30, node="n2").read(2, ["b1"], node="n1")
        h.info(5, "nemesis", "start-partition", {"kind": "isolate", "desc": "n2 | n1 n3"})
        h.info(25, "nemesis", "stop-partition", {"kind": "isolate"})
        h.read(16, [], node="n1")
        self.assertKind(h.check("liveness"), "expired-while-alive")

    def test_pinned_broker_connection_drop_excuses(self):
        h = H().hb("p1", 0, 30, node="n2", pinned=True).read(2, ["p1"], node="n1")
        h.op(12, 18, "heartbeat", {"broker": "p1", "timeout_ms": 10000, "pinned": "n2"},
             node="n2", type_="info", error="timeout: timed out")
        h.read(15, [], node="n1")
        self.assertIs(h.check("liveness")["valid"], True)

    def test_fault_windows(self):
        h = H().info(2, "nemesis", "kill", {"node": "n1"}).info(4, "nemesis", "restart",
                                                                 {"node": "n1"})
        h.info(6, "harness", "exit", {"node": "n2", "rc": -11, "expected": False})
        h.info(9, "harness", "heal")
        ws = checker.fault_windows(h.events(), {"election_timeout_ms": 1000,
                                                "report_recovery_ms": 1000})
        self.assertEqual(ws, [(2 * S, 7 * S), (6 * S, 12 * S)])


class PlotTest(unittest.TestCase):
    @unittest.skipUnless(__import__("shutil").which("gnuplot"), "gnuplot not installed")
    def test_png_timeline(self):
        import plot
        evs = read_history(os.path.join(FIXTURES, "good__liveness__heartbeat.jsonl"))
        wins = plot.nemesis_windows(evs, evs[-1]["time"])
        self.assertEqual([w[2] for w in wins], ["kill n1"])
        with tempfile.TemporaryDirectory() as d:
            png = os.path.join(d, "timeline.png")
            plot.plot(evs, png)
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertGreater(os.path.getsize(png), 2000)


if __name__ == "__main__":
    unittest.main()
