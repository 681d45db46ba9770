"""Exactly-once writes (docs/exactly-once.md): a copy of a forwarded write that reaches a leader
late -- after newer writes, and at a leader elected since -- changes nothing. The
RAFTNS_TEST_FORWARD_ECHO_MS hook makes every follower send each forwarded write to the leader once
more, that long after its first send, as the retransmitting socket of the fault-suite run in
tests/jepsen/evidence/README.md did. Without request ids (the RAFTNS_BREAK=no-reqid mutant) the late
copy overwrites the newer value and these tests fail."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import nsclient as ns  # noqa: E402
import harness  # noqa: E402
from harness import T, wait_until  # noqa: E402

RAFTNSCTL = os.environ.get("RAFTNSCTL_BIN", "raftnsctl")
SECRET = "raftns-test-secret"
NAMESPACE = "once"
ANSWERED = "the late copy of a forwarded write was answered"


def ctl(nodes, *args):
    a = [RAFTNSCTL, "--secret", SECRET, "--timeout-ms", str(int(T(15.0) * 1000))]
    for nd in nodes:
        a += ["-n", "127.0.0.1:%d" % nd.client_port]
    return subprocess.run(a + list(args), capture_output=True, timeout=T(60.0), text=True)


def copies(nd, verdict):
    code, body = nd.http_get("/metrics")
    assert code == 200, code
    want = 'raftns_write_copies_total{verdict="%s"} ' % verdict
    for line in body.decode().splitlines():
        if line.startswith(want):
            return int(line.split()[-1])
    raise AssertionError("no %s in /metrics of node %d" % (want, nd.id))


class LateCopies(clusterh.ClusterTestCase):
    # Long enough for a leadership transfer to finish before the first late copy is sent, so
    # that the copy meets the new leader (test_late_copy_at_a_new_leader_changes_nothing).
    ECHO_S = 6.0

    def setUp(self):
        os.environ["RAFTNS_TEST_FORWARD_ECHO_MS"] = str(int(T(self.ECHO_S) * 1000))
        try:
            super().setUp()
        finally:
            del os.environ["RAFTNS_TEST_FORWARD_ECHO_MS"]

    def put(self, nd, key, value):
        r = nd.request(ns.PUT_KV_CONFIG, {"namespace": NAMESPACE, "key": key, "value": value})
        self.assertEqual(r.code, 0, "PUT %s=%s on node %d: %r" % (key, value, nd.id, r.remark))

    def values(self, key):
        out = {}
        for nd in self.cluster.live():
            r = nd.request(ns.GET_KV_CONFIG, {"namespace": NAMESPACE, "key": key,
                                              "raftnsConsistent": "true"})
            out[nd.id] = (r.ext or {}).get("value") if r.code == 0 else "code %d" % r.code
        return out

    def late_copies_answered(self, nd, n):
        wait_until(lambda: nd.log_text().count(ANSWERED) >= n, T(self.ECHO_S + 15.0),
                   "%d late copies answered on node %d" % (n, nd.id))

    def test_late_copy_after_a_newer_write_changes_nothing(self):
        c = self.cluster
        leader = c.leader()
        follower = c.followers(leader)[0]
        self.put(follower, "k0", "first")   # forwarded: its late copy follows in ECHO_S
        self.put(leader, "k0", "second")    # not forwarded: no copy
        self.late_copies_answered(follower, 1)
        self.assertEqual(self.values("k0"), {nd.id: "second" for nd in c.all()})
        self.assertEqual(copies(leader, "duplicate"), 1)
        self.assertEqual(copies(leader, "stale"), 0)
        self.assertIn("copy verdict 1", follower.log_text())  # NS_REQID_DUPLICATE

    def test_late_copy_at_a_new_leader_changes_nothing(self):
        c = self.cluster
        old = c.leader()
        follower, other = c.followers(old)
        self.put(follower, "k1", "first")
        last = []

        def other_leads():
            if c.current_leader() is other:
                return True
            r = ctl(c.all(), "leader", "transfer", str(other.id))
            last[:] = [r.returncode, r.stdout + r.stderr]
            return c.current_leader() is other
        # A transfer answered with an error may still have moved leadership: poll the outcome.
        t0 = time.monotonic()
        wait_until(other_leads, T(self.ECHO_S), "leadership on node %d (raftnsctl: %r)" % (
            other.id, last), 0.2)
        self.assertLess(time.monotonic() - t0, T(self.ECHO_S) * 0.8,
                        "the transfer took so long that the late copy may have met the old "
                        "leader")
        self.put(other, "k1", "second")
        self.put(old, "k2", "after")  # a forwarded write of the old leader: its copy is fine too
        self.late_copies_answered(follower, 1)
        self.late_copies_answered(old, 1)
        self.assertEqual(self.values("k1"), {nd.id: "second" for nd in c.all()})
        self.assertEqual(self.values("k2"), {nd.id: "after" for nd in c.all()})
        self.assertEqual(copies(other, "duplicate"), 2)


if __name__ == "__main__":
    harness.main()
