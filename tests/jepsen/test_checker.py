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
                                  "convergence"})
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
                    if name != "convergence":
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
                                "--out", os.path.join(d, "r.json")],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("VALID", p.stdout)


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
