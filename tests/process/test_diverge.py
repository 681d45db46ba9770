"""Divergence by majority (docs/divergence.md) on three real nodes: a node whose state the
RAFTNS_TEST_CORRUPT_AT test hook corrupts at a future log index is the one the majority verdict
marks diverged, whether it is a follower or the leader; a diverged leader hands leadership to a
healthy voter; the diverged node copies the leader's state, a later verdict agrees again, and it
serves the same 105/106/KV bytes as the others. Against the old leader-trusting check the leader
case fails (the healthy followers are the ones marked diverged) and neither case recovers."""

import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, wait_until  # noqa: E402

RAFTNSCTL = os.environ.get("RAFTNSCTL_BIN", "raftnsctl")
SECRET = "raftns-test-secret"
CHECKPOINT_ARGS = ("--checkpoint-entries", "3", "--checkpoint-ms", "300")
CORRUPT_AHEAD = 12  # entries after the victim's restart before its state corrupts itself
FETCH_CHUNK = 500   # bytes per state-copy reply (the state is about 2 KB)


def ctl(nodes, *args):
    a = [RAFTNSCTL, "--secret", SECRET, "--timeout-ms", str(int(T(15.0) * 1000))]
    for nd in nodes:
        a += ["-n", "127.0.0.1:%d" % nd.client_port]
    return subprocess.run(a + list(args), capture_output=True, timeout=T(60.0), text=True)


def div(nd):
    """The /status "divergence" object ({} from a build without it, so such a build fails on
    behaviour, not on a missing key)."""
    return nd.status().get("divergence") or {}


def ever_diverged(nd):
    st = nd.status()
    return st["diverged"] or (st.get("divergence") or {}).get("times_diverged", 0) >= 1


def served_bytes(nd):
    """What every healthy node must answer identically: 105, 106, and the KV namespaces the
    test writes and the corruption hook touches (219 and 101)."""
    with nd.conn(timeout=T(3.0)) as c:
        out = {}
        for topic in ("TopicA", "TopicB"):
            r = c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, timeout=T(3.0))
            out["105 " + topic] = (r.code, r.body)
        r = c.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(3.0))
        out["106"] = (r.code, r.body)
        for space in ("app", "raftns.test"):
            r = c.request(ns.GET_KVLIST_BY_NAMESPACE, {"namespace": space}, timeout=T(3.0))
            out["219 " + space] = (r.code, r.body)
        r = c.request(ns.GET_KV_CONFIG, {"namespace": "raftns.test", "key": "corrupt"},
                      timeout=T(3.0))
        out["101 corrupt"] = (r.code, r.body)
    return out


class Divergence(clusterh.ClusterTestCase):
    EXTRA_ARGS = CHECKPOINT_ARGS

    def setUp(self):
        # Test hook: copies served in small chunks, so a copy takes several replies.
        os.environ["RAFTNS_TEST_FETCH_CHUNK"] = str(FETCH_CHUNK)
        try:
            super().setUp()
        finally:
            del os.environ["RAFTNS_TEST_FETCH_CHUNK"]

    def put_kv(self, nd, key, value):
        with nd.conn(timeout=T(5.0)) as c:
            r = c.request(ns.PUT_KV_CONFIG, {"namespace": "app", "key": key, "value": value},
                          timeout=T(10.0))
        return r.code

    def write(self, broker, nd, n=1):
        for _ in range(n):
            broker.counter += 1
            clusterh.write_until_acked(broker, nd)

    def poke(self, broker, nd):
        """One registration attempt through nd; its outcome does not matter (a diverged node
        refuses it)."""
        broker.counter += 1
        try:
            broker.register(nd, timeout=T(5.0))
        except (OSError, ns.ConnectionClosed, TimeoutError):
            broker.drop(nd)

    def restart_corrupted(self, victim):
        """Restarts victim with its state set to corrupt itself CORRUPT_AHEAD entries from now;
        returns that index."""
        at = max(nd.status()["commit_index"] for nd in self.cluster.live()) + CORRUPT_AHEAD
        victim.stop()
        os.environ["RAFTNS_TEST_CORRUPT_AT"] = str(at)
        try:
            victim.start(wait=False)
        finally:
            del os.environ["RAFTNS_TEST_CORRUPT_AT"]
        victim.wait_ready(T(30.0))
        return at

    def wait_recovered(self, victim, others):
        def recovered():
            d = div(victim)
            return (d.get("times_recovered", 0) >= 1 and d.get("health") == "healthy"
                    and not victim.status()["diverged"]) and d
        d = wait_until(recovered, T(30.0), "the diverged node to recover", 0.1)
        self.assertGreaterEqual(d["installs"], 1)
        chunks = [int(m) for m in re.findall(r"received in (\d+) chunks", victim.log_text())]
        self.assertTrue(chunks and max(chunks) >= 2, "copy in several chunks: %r" % chunks)
        for nd in others:
            self.assertFalse(ever_diverged(nd), "%r was marked diverged" % nd)

    def assert_same_bytes(self, broker, leader_hint):
        # One more write, then every node must answer the same bytes, the victim included.
        self.write(broker, leader_hint)
        self.cluster.wait_converged(timeout=T(30.0))
        want = None

        def same():
            nonlocal want
            got = {nd.id: served_bytes(nd) for nd in self.cluster.all()}
            first = got[self.cluster.all()[0].id]
            want = got
            return all(v == first for v in got.values())
        wait_until(same, T(15.0), "105/106/KV bytes equal on every node")
        first = next(iter(want.values()))
        self.assertEqual(first["105 TopicA"][0], 0)
        self.assertEqual(first["106"][0], 0)
        self.assertEqual(first["219 app"][0], 0)
        self.assertNotEqual(first["101 corrupt"][0], 0, "the corrupted key must be gone")

    def judged_diverged(self, victim, others, broker, writer):
        # Writes keep coming, so checkpoints keep coming (a later one is what the old
        # leader-trusting check needed).
        def marked():
            self.poke(broker, writer)
            for nd in others:
                self.assertFalse(ever_diverged(nd), "healthy %r was marked diverged" % nd)
            return ever_diverged(victim)
        wait_until(marked, T(30.0), "a verdict to mark %r diverged" % victim, 0.1)
        self.assertIn("STATE DIVERGED", victim.log_text())

    def test_corrupted_follower_is_marked_by_the_majority_and_recovers(self):
        leader = self.cluster.leader()
        b = self.broker()
        self.write(b, leader, 3)
        self.assertEqual(self.put_kv(leader, "k1", "v1"), 0)
        wait_until(lambda: all(nd.status()["digest_index"] > 0 for nd in self.cluster.all()),
                   T(15.0), "a checkpoint on every node")
        victim = self.cluster.followers(leader)[0]
        others = [nd for nd in self.cluster.all() if nd is not victim]
        at = self.restart_corrupted(victim)
        leader = self.cluster.leader()
        self.assertIsNot(leader, victim)
        wait_until(lambda: (self.write(b, leader), victim.status()["applied_index"] >= at)[1],
                   T(30.0), "the victim to apply past its corruption index")
        self.judged_diverged(victim, others, b, leader)
        for nd in others:
            self.assertNotIn("STATE DIVERGED", nd.log_text())
        self.wait_recovered(victim, others)
        self.assertIn("installed a healthy state", victim.log_text())
        self.assert_same_bytes(b, leader)

    def test_corrupted_leader_is_marked_steps_down_and_recovers(self):
        leader = self.cluster.leader()
        b = self.broker()
        self.write(b, leader, 3)
        self.assertEqual(self.put_kv(leader, "k1", "v1"), 0)
        wait_until(lambda: all(nd.status()["digest_index"] > 0 for nd in self.cluster.all()),
                   T(15.0), "a checkpoint on every node")
        victim = self.cluster.followers(leader)[0]
        others = [nd for nd in self.cluster.all() if nd is not victim]
        at = self.restart_corrupted(victim)
        last = []

        def victim_leads():
            if self.cluster.current_leader() is victim:
                return True
            r = ctl(self.cluster.all(), "leader", "transfer", str(victim.id))
            last[:] = [r.returncode, r.stdout + r.stderr]
            return self.cluster.current_leader() is victim
        # A transfer answered with an error may still have moved leadership: poll the outcome.
        wait_until(victim_leads, T(30.0), "leadership on the victim (raftnsctl: %r)" % last, 0.2)
        self.assertLess(victim.status()["applied_index"], at, "corrupted before it led")
        # Writes through the victim (the leader) until it applies past its corruption index.
        wait_until(lambda: (self.poke(b, victim), victim.status()["applied_index"] >= at)[1],
                   T(30.0), "the victim leader to apply past its corruption index")
        self.judged_diverged(victim, others, b, victim)
        wait_until(lambda: "this leader's state diverged: handing leadership" in victim.log_text(),
                   T(15.0), "the diverged leader to hand leadership over")
        new = self.cluster.leader(exclude=(victim.id,), timeout=T(30.0))
        self.assertIn(new, others)
        for nd in others:
            self.assertNotIn("STATE DIVERGED", nd.log_text())
        self.wait_recovered(victim, others)
        self.assert_same_bytes(b, new)


if __name__ == "__main__":
    harness.main()
