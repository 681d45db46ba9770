#!/usr/bin/env python3
"""Self-test of the controller checks (checker_controller.py) on hand-made histories: one valid
history of a failover, then that history broken in one way per test, each rejected by the check
aimed at it (and only the broken fact changed). It starts no raftns process."""

import copy
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import checker  # noqa: E402

S = 1_000_000_000  # history times are nanoseconds
CHECKS = ("ctl-epochs", "ctl-elected-in-sync", "ctl-fencing", "ctl-failover", "ctl-tables")


class History:
    """Builds events in time order; every client op is an invoke and a completion 10 ms
    later."""

    def __init__(self, **cfg):
        self.events = []
        self.pid = 0
        conf = {"nodes": ["n1", "n2", "n3"], "workloads": ["controller"], "scale": 1,
                "election_timeout_ms": 1000, "report_recovery_ms": 5000,
                "ctl_failover_bound_ms": 10000, "ctl_warm_ms": 10000, "ctl_unclean": False}
        conf.update(cfg)
        self.info("harness", "config", conf, 0)

    def info(self, process, f, value, t, **extra):
        ev = {"process": process, "type": "info", "f": f, "value": value, "time": int(t * S)}
        ev.update(extra)
        self.events.append(ev)

    def op(self, f, value, t, result, type_="ok", node="n1"):
        self.pid += 1
        base = {"process": self.pid, "f": f, "workload": "controller", "node": node}
        self.events.append(dict(base, type="invoke", value=value, time=int(t * S)))
        self.events.append(dict(base, type=type_, value=result, time=int((t + 0.01) * S)))

    def status(self, t, node="n1", **groups):
        """groups: name=(master epoch, master or None, set epoch, set)."""
        self.op("ctl-status", {}, t, {"applied_index": int(t * 10), "groups": {
            g: {"masterEpoch": e, "master": m, "syncStateSetEpoch": se, "set": sorted(st)}
            for g, (e, m, se, st) in groups.items()}}, node=node)

    def alter(self, t, master, epoch, set_epoch, want, code, new_epoch=0, stale=False):
        res = {"code": code, "newSyncStateSetEpoch": new_epoch}
        if code == 0:
            res["set"] = sorted(want)
        self.op("alter", {"group": "g", "broker": master - 1, "id": master, "master": master,
                          "masterEpoch": epoch, "set": sorted(want),
                          "syncStateSetEpoch": set_epoch, "stale": stale}, t, res,
                "ok" if code == 0 else "fail")

    def notify(self, t, master, epoch, set_epoch, to=2):
        self.info("harness", "ctl-notify", {"group": "g", "broker": to - 1, "id": to,
                                            "masterBrokerId": master, "masterEpoch": epoch,
                                            "syncStateSetEpoch": set_epoch, "up": True}, t,
                  workload="controller")

    def life(self, t, what, broker_id, mode=None):
        v = {"group": "g", "broker": broker_id - 1, "id": broker_id}
        if mode:
            v["mode"] = mode
        self.info("harness", "ctl-" + what, v, t, workload="controller")

    def final(self, t, ctl=None):
        ctl = ctl or {"n1": "abc", "n2": "abc", "n3": "abc"}
        self.info("harness", "final-tables", {"stable": True, "applied_index": [99], "nodes": {
            n: {"106": "0:x", "ctl": h, "ctl_groups": 1} for n, h in ctl.items()}}, t)

    def sort(self):
        self.events.sort(key=lambda ev: ev["time"])
        for i, ev in enumerate(self.events):
            ev["index"] = i
        return self.events


def failover(**tweaks):
    """Master 1 of g with S = {1, 2} dies at 10 s; 2 is elected (epoch 2, set epoch 3) and
    notified; a stale alter from 2 is refused; every node ends with the same table. tweaks
    replace parts of the story to break one fact."""
    h = History(**tweaks.get("cfg", {}))
    for i in (1, 2, 3):
        h.life(0.5 * i, "up", i)
    h.op("elect", {"group": "g", "broker": 0, "id": 1}, 1.0,
         {"code": 0, "masterBrokerId": 1, "masterEpoch": 1, "syncStateSetEpoch": 1, "set": [1]})
    h.status(2.0, g=(1, 1, 1, [1]))
    h.alter(3.0, 1, 1, 1, [1, 2], 0, 2)
    h.status(4.0, g=(1, 1, 2, [1, 2]))
    h.status(4.1, node="n2", g=(1, 1, 2, [1, 2]))
    h.life(10.0, "down", 1, "close")
    el = tweaks.get("elected", (2, 2, 3))  # (master, master epoch, set epoch)
    if el is not None:
        h.notify(10.3, *el)
        h.status(11.0, g=(el[1], el[0], el[2], [el[0]]))
    h.alter(12.0, 2, 1, 3, [2, 3], 2000, stale=True)  # stale master epoch: refused
    for extra in tweaks.get("extra", []):
        extra(h)
    for k in range(13, 41, 3):
        st = tweaks.get("late_state", (el[1], el[0], el[2], [el[0]]) if el else (1, 1, 2, [1, 2]))
        h.status(float(k), node="n%d" % (1 + k % 3), g=st)
    h.final(41.0, tweaks.get("ctl"))
    return h.sort()


def run(events):
    return checker.check_events(events)["checks"]


class ControllerCheckerTest(unittest.TestCase):
    def assert_only(self, events, bad, kind):
        res = run(events)
        self.assertIs(res[bad]["valid"], False, res[bad])
        self.assertIn(kind, [e["kind"] for e in res[bad]["errors"]], res[bad])
        for name in CHECKS:
            if name != bad and res[name]["valid"] != "unknown":
                self.assertIs(res[name]["valid"], True, (name, res[name]))
            elif name != bad:  # a story without an election gives that check nothing
                self.assertEqual(res[name]["errors"][0]["kind"], "nothing-checked")

    def test_valid_failover(self):
        res = run(failover())
        for name in CHECKS:
            with self.subTest(check=name):
                self.assertIs(res[name]["valid"], True, res[name])
                self.assertGreater(res[name]["counts"]["checked"], 0, res[name])
        self.assertEqual(res["ctl-fencing"]["counts"]["stale_refused"], 1)
        self.assertEqual(res["ctl-failover"]["counts"]["checked"], 1)

    def test_two_masters_with_one_epoch(self):
        # a notification names master 3 for epoch 2 while the tables say 2
        ev = failover(extra=[lambda h: h.notify(11.5, 3, 2, 3, to=3)])
        res = run(ev)
        self.assertIs(res["ctl-epochs"]["valid"], False)
        self.assertIn("two-masters-one-epoch",
                      [e["kind"] for e in res["ctl-epochs"]["errors"]])

    def test_two_sets_with_one_epoch(self):
        ev = failover(extra=[lambda h: h.status(12.5, node="n3", g=(2, 2, 3, [2, 3]))])
        res = run(ev)
        self.assertIs(res["ctl-epochs"]["valid"], False)
        self.assertIn("two-sets-one-epoch", [e["kind"] for e in res["ctl-epochs"]["errors"]])

    def test_epoch_goes_back_on_a_node(self):
        # n1 read epoch 2 at 11 s, then epoch 1 again
        ev = failover(extra=[lambda h: h.status(12.5, g=(1, 1, 2, [1, 2]))])
        res = run(ev)
        self.assertIs(res["ctl-epochs"]["valid"], False)
        self.assertIn("went-back", [e["kind"] for e in res["ctl-epochs"]["errors"]])

    def test_epochs_crossed(self):
        # a state with a higher master epoch but a lower set epoch than another: no one log
        ev = failover(extra=[lambda h: h.status(12.5, node="n3", g=(3, None, 2, [1, 2]))])
        res = run(ev)
        self.assertIs(res["ctl-epochs"]["valid"], False)
        self.assertIn("epochs-crossed", [e["kind"] for e in res["ctl-epochs"]["errors"]])

    def test_master_outside_its_set(self):
        ev = failover(extra=[lambda h: h.status(12.5, node="n3", g=(2, 2, 4, [3]))])
        res = run(ev)
        self.assertIs(res["ctl-epochs"]["valid"], False)
        self.assertIn("master-not-in-set", [e["kind"] for e in res["ctl-epochs"]["errors"]])

    def test_elected_outside_sync_state_set(self):
        # broker 3 was not in S = {1, 2} (set epoch 2) when it became master at epoch 2
        self.assert_only(failover(elected=(3, 2, 3)), "ctl-elected-in-sync",
                         "elected-outside-sync-state-set")

    def test_unclean_election_is_not_judged(self):
        r = run(failover(elected=(3, 2, 3), cfg={"ctl_unclean": True}))
        self.assertEqual(r["ctl-elected-in-sync"]["valid"], "unknown")

    def test_fenced_alter_accepted(self):
        # the stale alter (master epoch 1 while the epoch is 2) answered 0
        ev = failover(extra=[lambda h: h.alter(12.5, 2, 1, 3, [2, 3], 0, 4),
                             lambda h: h.status(12.8, g=(2, 2, 4, [2, 3]))],
                      late_state=(2, 2, 4, [2, 3]))
        self.assert_only(ev, "ctl-fencing", "alter-accepted-from-fenced-master")

    def test_alter_skipping_a_set_epoch(self):
        ev = failover(extra=[lambda h: h.alter(12.5, 2, 2, 2, [2, 3], 0, 4),
                             lambda h: h.status(12.8, g=(2, 2, 4, [2, 3]))],
                      late_state=(2, 2, 4, [2, 3]))
        self.assert_only(ev, "ctl-fencing", "alter-epoch-mismatch")

    def test_the_same_alter_with_current_epochs_is_accepted(self):
        ev = failover(extra=[lambda h: h.alter(12.5, 2, 2, 3, [2, 3], 0, 4),
                             lambda h: h.status(12.8, g=(2, 2, 4, [2, 3]))],
                      late_state=(2, 2, 4, [2, 3]))
        res = run(ev)
        for name in CHECKS:
            self.assertIs(res[name]["valid"], True, (name, res[name]))

    def test_no_master_after_failover(self):
        # nobody elected: the tables keep the dead master until the end
        self.assert_only(failover(elected=None), "ctl-failover", "no-master-within-bound")

    def test_late_master_is_late(self):
        # elected only 25 s after the death: past the 10 s bound (no fault, no node start)
        def late(h):
            h.notify(35.0, 2, 2, 3)
        ev = failover(elected=None, extra=[late], late_state=(1, 1, 2, [1, 2]))
        res = run(ev)
        self.assertIs(res["ctl-failover"]["valid"], False, res["ctl-failover"])

    def test_fault_window_moves_the_deadline(self):
        # the same late election with the raftns leader killed 9-20 s: the deadline is the
        # window's end + margin (2 election timeouts + 5 s) + the bound, 37 s: in time
        def fault(h):
            h.info("nemesis", "kill", {"node": "n1"}, 9.0)
            h.info("nemesis", "restart", {"node": "n1"}, 20.0)
            h.info("harness", "node-start", {"node": "n1", "pid": 7, "spawn_time": int(20 * S)},
                   20.0)
            h.notify(35.0, 2, 2, 3)
        ev = failover(elected=None, extra=[fault], late_state=(1, 1, 2, [1, 2]))
        r = run(ev)["ctl-failover"]
        self.assertIs(r["valid"], True, r)
        self.assertEqual((r["counts"]["checked"], r["counts"]["late"]), (1, 0), r)

    def test_node_start_adds_warm_up(self):
        # a node started at 12 s may lead, judging masters only 10 s after its start: the
        # deadline (20 s) grows to 30 s, so an election at 27 s is in time
        def start(h):
            h.info("harness", "node-start", {"node": "n2", "pid": 8, "spawn_time": int(12 * S)},
                   12.0)
            h.notify(27.0, 2, 2, 3)
        r = run(failover(elected=None, extra=[start], late_state=(1, 1, 2, [1, 2])))
        self.assertIs(r["ctl-failover"]["valid"], True, r["ctl-failover"])
        def start_late(h):
            h.info("harness", "node-start", {"node": "n2", "pid": 8, "spawn_time": int(12 * S)},
                   12.0)
            h.notify(31.0, 2, 2, 3)
        r = run(failover(elected=None, extra=[start_late], late_state=(1, 1, 2, [1, 2])))
        self.assertIs(r["ctl-failover"]["valid"], False, r["ctl-failover"])

    def test_no_live_sync_member_no_obligation(self):
        # broker 2, the only other member of S, dies with the master: nobody is owed a master
        ev = failover(elected=None, extra=[lambda h: h.life(10.1, "down", 2)])
        r = run(ev)["ctl-failover"]
        self.assertEqual(r["counts"]["no_live_sync_member"], 1, r)
        self.assertEqual(r["counts"]["late"], 0, r)

    def test_tables_differ_after_heal(self):
        self.assert_only(failover(ctl={"n1": "abc", "n2": "abd", "n3": "abc"}), "ctl-tables",
                         "controller-table-mismatch")

    def test_node_without_controller_table(self):
        ev = failover()
        for e in ev:
            if e["f"] == "final-tables":
                del e["value"]["nodes"]["n3"]["ctl"]
        self.assert_only(ev, "ctl-tables", "no-controller-table")

    def test_not_run_when_not_declared(self):
        ev = copy.deepcopy(failover())
        ev[0]["value"]["workloads"] = ["kv"]
        res = checker.check_events(ev)["checks"]
        self.assertFalse(set(CHECKS) & set(res), res)
        self.assertNotIn("broker-set", res)
        self.assertIn("kv-linearizable", res)

    def test_nothing_observed_is_unknown(self):
        h = History()
        h.final(1.0)
        res = run(h.sort())
        for name in ("ctl-epochs", "ctl-elected-in-sync", "ctl-fencing", "ctl-failover"):
            self.assertEqual(res[name]["valid"], "unknown", (name, res[name]))


if __name__ == "__main__":
    unittest.main()
