"""A node that cannot answer from its own state hands reads to the leader (issue 9 item 4,
docs/readiness.md): a restarted follower held "not ready" while it knows a leader (the
RAFTNS_TEST_READY_DELAY_MS test hook defers the leader's read index) answers 105, 106, 206, 219
and GET_KV with the leader's bytes and names the leader in ext raftnsServedBy; without a leader
it answers "not ready" after a bounded wait; once ready it answers itself again. Unchanged
re-registrations are forwarded by a node that is not ready or has no leader contact (a minority),
and answered locally (the heartbeat short-cut) only by a ready node in touch with a leader."""

import os
import sys
import time
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import nsclient as ns  # noqa: E402
from clusterh import T, leader_id_of  # noqa: E402
from harness import wait_until  # noqa: E402

SERVED_BY = "raftnsServedBy"
KV_NS = "fwd-ns"
READS = [  # (code, ext) of the reads compared byte for byte with the leader's answer
    (ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicF1"}),
    (ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "NoSuchTopic"}),
    (ns.GET_BROKER_CLUSTER_INFO, {}),
    (ns.GET_ALL_TOPIC_LIST, {}),
    (ns.GET_KVLIST_BY_NAMESPACE, {"namespace": KV_NS}),
    (ns.GET_KV_CONFIG, {"namespace": KV_NS, "key": "k1"}),
]


def metric(nd, name):
    code, body = nd.http_get("/metrics")
    assert code == 200, code
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


def forwarded_writes(nd):
    return metric(nd, "raftns_forwarded_writes_total")


def served_by(r):
    return (r.ext or {}).get(SERVED_BY)


def status_or_none(nd):
    try:
        return nd.status()
    except (OSError, urllib.error.URLError):
        return None


class ReadForward(clusterh.ClusterTestCase):
    def setUp(self):
        super().setUp()
        self.addCleanup(os.environ.pop, "RAFTNS_TEST_READY_DELAY_MS", None)

    def seed(self, leader):
        b = self.broker(name="broker-f", addr="127.0.0.1:45911", topics=["TopicF1", "TopicF2"])
        self.assertEqual(b.register(leader).code, 0)
        r = leader.request(ns.PUT_KV_CONFIG, {"namespace": KV_NS, "key": "k1", "value": "v1"})
        self.assertEqual(r.code, 0, r)
        self.cluster.wait_converged()
        return b

    def restart_held(self, nd, hold_s):
        """Restarts nd so that it stays not ready for hold_s seconds after it joins."""
        nd.stop()
        os.environ["RAFTNS_TEST_READY_DELAY_MS"] = str(int(hold_s * 1000))
        try:
            nd.start(wait=False)
        finally:
            del os.environ["RAFTNS_TEST_READY_DELAY_MS"]

    def wait_not_ready_with_leader(self, nd, leader):
        def pred():
            st = status_or_none(nd)
            return st is not None and st.get("ready") is False and \
                leader_id_of(st) == leader.id
        wait_until(pred, T(20.0), "node %d up, not ready, following node %d" % (nd.id, leader.id))

    def test_not_ready_follower_answers_with_the_leaders_data(self):
        c = self.cluster
        leader = c.leader()
        b = self.seed(leader)
        fol = c.followers(leader)[0]
        self.restart_held(fol, T(30.0))
        self.wait_not_ready_with_leader(fol, leader)

        relayed = metric(fol, "raftns_forwarded_reads_total")
        for code, ext in READS:
            want = leader.request(code, ext)
            got = fol.request(code, ext)
            what = "code %d %r on not-ready node %d" % (code, ext, fol.id)
            self.assertEqual(served_by(got), str(leader.id), "%s: %r" % (what, got))
            self.assertEqual((got.code, got.remark, got.body), (want.code, want.remark, want.body),
                             what)
            self.assertIsNone(served_by(want), "the leader answered itself: no raftnsServedBy")
        self.assertGreaterEqual(metric(fol, "raftns_forwarded_reads_total"),
                                relayed + len(READS))
        # A binary (ROCKETMQ) header and a legacy version travel with the request.
        for ser, version in ((ns.SER_ROCKETMQ, 479), (ns.SER_JSON, 121)):
            ext = {"topic": "TopicF1"}
            with leader.conn() as cl, fol.conn() as cf:
                want = cl.request(ns.GET_ROUTEINFO_BY_TOPIC, ext, ser=ser, version=version,
                                  timeout=T(5.0))
                got = cf.request(ns.GET_ROUTEINFO_BY_TOPIC, ext, ser=ser, version=version,
                                 timeout=T(5.0))
            self.assertEqual((got.ser, got.code, got.body), (ser, 0, want.body), got)
            self.assertEqual(served_by(got), str(leader.id))
        self.assertEqual(fol.request(*READS[0]).code, 0)
        self.assertEqual(fol.request(*READS[1]).code, clusterh.TOPIC_NOT_EXIST)

        # The unchanged re-registration goes to the leader; the broker still gets 0.
        before = forwarded_writes(fol)
        r = b.register(fol)
        self.assertEqual(r.code, 0, r)
        self.assertGreaterEqual(forwarded_writes(fol), before + 1,
                         "an unchanged registration on a not-ready node was answered locally")
        self.assertIs(fol.status()["ready"], False, "the hold ended during the checks")
        self.assertIn("readiness delayed", fol.log_text())

    def test_ready_follower_answers_itself(self):
        c = self.cluster
        leader = c.leader()
        b = self.seed(leader)
        fol = c.followers(leader)[0]
        self.restart_held(fol, T(2.0))
        wait_until(lambda: (status_or_none(fol) or {}).get("ready") is True, T(30.0),
                   "node %d ready after the hold" % fol.id)
        c.wait_converged()
        for code, ext in READS:
            got = fol.request(code, ext)
            self.assertIsNone(served_by(got), "a ready node answers itself: %r" % got)
            self.assertEqual(got.body, leader.request(code, ext).body)
        # A follower short-cuts only within 2 s of the leader accepting its last liveness
        # report (NS_LIVENESS_LINK_FRESH_MS); the waits above can outlast that, and the
        # first registration after them is forwarded and starts the reports again.
        def short_cut():
            n = forwarded_writes(fol)
            self.assertEqual(b.register(fol).code, 0)
            return forwarded_writes(fol) == n
        wait_until(short_cut, T(10.0), "node %d to take the heartbeat short-cut" % fol.id)
        before = forwarded_writes(fol)
        for _ in range(3):
            self.assertEqual(b.register(fol).code, 0)
        self.assertEqual(forwarded_writes(fol), before,
                         "a ready node in touch with its leader takes the heartbeat short-cut")

    def test_not_ready_without_leader_refuses_after_a_bounded_wait(self):
        c = self.cluster
        leader = c.leader()
        self.seed(leader)
        fol = c.followers(leader)[0]
        self.restart_held(fol, T(60.0))
        self.wait_not_ready_with_leader(fol, leader)
        for nd in c.all():
            if nd is not fol:
                nd.pause()
        wait_until(lambda: leader_id_of(fol.status()) == 0, T(20.0),
                   "node %d to lose its leader" % fol.id)
        t0 = time.monotonic()
        r = fol.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicF1"}, timeout=T(10.0))
        waited = time.monotonic() - t0
        self.assertEqual((r.code, r.remark), (1, "not ready"), r)
        self.assertIsNone(served_by(r))
        # The wait for a leader ends 2 s after the leader was lost (seen above within 50 ms).
        self.assertGreaterEqual(waited, 1.0, "answered without waiting for a leader")
        self.assertLess(waited, T(5.0), "the wait for a leader is not bounded")
        t0 = time.monotonic()
        r = fol.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(10.0))
        self.assertEqual((r.code, r.remark), (1, "not ready"), r)
        self.assertLess(time.monotonic() - t0, 1.0,
                        "leaderless for over 2 s: a read is refused at once")
        for nd in c.all():
            nd.resume()
        new_leader = c.leader()
        if new_leader is fol:
            return  # it became the leader itself: ready by its barrier, it answers itself

        def forwarded():
            got = fol.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicF1"})
            return got.code == 0 and served_by(got) == str(new_leader.id)
        wait_until(forwarded, T(20.0), "reads forwarded to the new leader %d" % new_leader.id)
        self.assertIs(fol.status()["ready"], False)

    def test_minority_node_forwards_unchanged_registration(self):
        c = self.cluster
        leader = c.leader()
        b = self.seed(leader)
        fol = c.followers(leader)[0]
        self.assertEqual(b.register(fol).code, 0)
        c.wait_converged()
        self.assertEqual(b.register(fol).code, 0)  # the short-cut, while in touch
        for nd in c.all():
            if nd is not fol:
                nd.pause()
        wait_until(lambda: leader_id_of(fol.status()) == 0, T(20.0),
                   "node %d to lose its leader" % fol.id)
        before = forwarded_writes(fol)
        r = b.register(fol, timeout=T(15.0))
        self.assertEqual(r.code, 1,
                         "a minority node answered an unchanged registration itself: %r" % r)
        self.assertIn("leader", r.remark or "")
        self.assertEqual(forwarded_writes(fol), before)  # parked: no leader to send it to
        for nd in c.all():
            nd.resume()
        c.leader()
        wait_until(lambda: b.register(fol, timeout=T(10.0)).code == 0, T(20.0),
                   "the registration accepted once the majority is back")


if __name__ == "__main__":
    clusterh.main()
