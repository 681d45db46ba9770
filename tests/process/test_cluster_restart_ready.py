"""Reads never go back in time after a restart (issue 3 item 5, the Jepsen finding): a node
restarted with kill -9 (a cluster follower, and a one-node cluster restarted from its data dir) is
polled from the moment it accepts connections; every read it answers must show at least the state
it had before the kill, and /status never says ready with an applied index below the pre-kill
one. raft 0.15 does not persist the commit index, so only the leader barrier (a leader) or the
leader's read index (a follower) prove the log was replayed."""

import os
import sys
import json
import re
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from clusterh import T  # noqa: E402
from harness import wait_until  # noqa: E402

QUERY_NOT_FOUND = 22
NS = "restart-ns"


def put_many(nd, start, count, batch=50):
    """PUT_KV_CONFIG keys k<start>..k<start+count-1> through nd, pipelined; all must answer 0."""
    with ns.Conn(nd.addr, timeout=T(10.0)) as c:
        for lo in range(start, start + count, batch):
            hi = min(lo + batch, start + count)
            rqs = [{"code": ns.PUT_KV_CONFIG,
                    "ext": {"namespace": NS, "key": "k%d" % i, "value": "v%d" % i}}
                   for i in range(lo, hi)]
            for i, r in zip(range(lo, hi), c.pipeline(rqs, timeout=T(30.0))):
                if r.code != 0:
                    raise AssertionError("put k%d: %r" % (i, r))


def get_kv(c, key):
    return c.request(ns.GET_KV_CONFIG, {"namespace": NS, "key": key}, timeout=T(3.0))


class Observer:
    """Polls one restarting node as fast as it answers and records every violation."""

    def __init__(self, nd, status_of, min_applied, key, value, broker_addr):
        self.nd, self.status_of = nd, status_of
        self.min_applied, self.key, self.value = min_applied, key, value
        self.broker_addr = broker_addr
        self.violations = []
        self.answered = 0  # reads answered with code 0
        self.refused = 0   # reads answered "not ready"
        self.ready_seen = 0
        self.last_status = None  # the last /status (or its error), for a failure message

    def check_status(self):
        try:
            st = self.status_of()
        except OSError as e:
            self.last_status = e
            return False
        self.last_status = st
        applied = int(st.get("applied_index") or 0)
        if st.get("ready") is True:
            self.ready_seen += 1
            if applied < self.min_applied:
                self.violations.append("ready with applied_index %d < %d before the kill"
                                       % (applied, self.min_applied))
        return st.get("ready") is True

    def check_reads(self):
        try:
            with ns.Conn(self.nd.addr, timeout=T(2.0)) as c:
                r = get_kv(c, self.key)
                if r.code == 0:
                    self.answered += 1
                    got = (r.ext or {}).get("value")
                    if got != self.value:
                        self.violations.append("GET %s answered %r, want %r"
                                               % (self.key, got, self.value))
                elif r.code == QUERY_NOT_FOUND:
                    self.violations.append("GET %s: key missing (%r)" % (self.key, r))
                else:
                    self.refused += 1
                r = c.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(3.0))
                if r.code == 0:
                    self.answered += 1
                    addrs = r.body_json().get("brokerAddrTable", {})
                    if not any(self.broker_addr in (bd.get("brokerAddrs") or {}).values()
                               for bd in addrs.values()):
                        self.violations.append("106 without the broker: %r" % r.body[:200])
                else:
                    self.refused += 1
        except (OSError, ns.ConnectionClosed, ns.ProtocolError, TimeoutError):
            pass  # not listening yet

    def run_until(self, done, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.nd.alive():
                raise AssertionError("node exited\n" + self.nd.log_tail())
            self.check_reads()
            ready = self.check_status()
            if ready and done():
                break
        else:
            raise AssertionError("%s\n%s" % (harness.expired(
                "node %d ready and caught up" % self.nd.id, timeout,
                "%d answered, %d refused, /status %r" % (self.answered, self.refused,
                                                         self.last_status)),
                self.nd.log_tail()))
        for _ in range(20):  # answers after ready stay at least as new
            self.check_reads()
            self.check_status()


def ready_log_brokers(nd):
    """Broker counts of the "server: ready; N brokers" log lines of nd's latest start: the
    state at the very moment it became ready, which a poller may miss."""
    text = nd.log_text()
    text = text[text.rfind("==== harness: starting"):]
    return [int(m.group(1)) for m in re.finditer(r"server: ready; (\d+) brokers", text)]


def register_broker(nd, b):
    r = b.register(nd)
    if r.code != 0:
        raise AssertionError("register: %r" % r)


class FollowerRestart(clusterh.ClusterTestCase):
    def test_restarted_follower_never_reads_back_in_time(self):
        c = self.cluster
        leader = c.leader()
        fol = c.followers(leader)[0]
        b = self.broker(name="broker-r", addr="127.0.0.1:41911", topics=["TopicR1", "TopicR2"])
        register_broker(leader, b)
        put_many(leader, 0, 500)
        c.wait_converged()
        before = int(fol.status()["applied_index"])
        self.assertGreaterEqual(before, 500)
        fol.kill9()
        put_many(leader, 500, 300)
        after = int(leader.status()["applied_index"])
        fol.start(wait=False)
        obs = Observer(fol, fol.status, before, "k499", "v499", b.addr)

        def caught_up():
            with fol.conn(timeout=T(2.0)) as cn:
                r = get_kv(cn, "k799")
                return r.code == 0 and int(fol.status()["applied_index"]) >= after
        obs.run_until(caught_up, T(30.0))
        self.assertEqual(obs.violations, [])
        self.assertEqual(ready_log_brokers(fol), [1])
        self.assertGreater(obs.answered, 0)
        c.wait_converged()


    def test_restarted_cluster_leader_never_reads_back_in_time(self):
        """The Jepsen case: a node that wins an election right after its restart has an
        applied index of 1 and a commit index of 0 until its leader barrier commits."""
        c = self.cluster
        leader = c.leader()
        b = self.broker(name="broker-q", addr="127.0.0.1:43911", topics=["TopicQ1", "TopicQ2"])
        register_broker(leader, b)
        put_many(leader, 0, 500)
        c.wait_converged()
        before = min(int(nd.status()["applied_index"]) for nd in c.all())
        for nd in c.all():
            nd.kill9()
        first, second = c[1], c[2]
        first.start(wait=False)
        obs = Observer(first, first.status, before, "k499", "v499", b.addr)
        wait_until(lambda: first.status(), T(10.0), "node 1 answers /status")
        for _ in range(50):  # node 1 alone: no quorum, never ready
            obs.check_reads()
            obs.check_status()
        second.start(wait=False)
        obs.run_until(lambda: True, T(30.0))
        self.assertEqual(obs.violations, [])
        wait_until(lambda: ready_log_brokers(second), T(10.0), "node 2 ready")
        self.assertEqual(ready_log_brokers(first), [1])
        self.assertEqual(ready_log_brokers(second), [1])
        c[3].start(wait=False)
        c.wait_ready()
        c.wait_converged()


class SingleNodeRestart(unittest.TestCase):
    def tearDown(self):
        for nd in list(harness.TEST_NODES):
            nd.cleanup(check=True)
        del harness.TEST_NODES[:]

    def test_restarted_single_node_replays_before_reads(self):
        nd = harness.Node()
        nd.start(timeout=T(15.0))
        b = clusterh.Broker(name="broker-s", addr="127.0.0.1:42911",
                            topics=["TopicS1", "TopicS2"])
        bconn = ns.Conn(nd.addr, timeout=T(5.0))  # open until the kill: a close expires it
        self.addCleanup(bconn.close)
        rq = b.register_request()
        r = bconn.request(rq["code"], rq["ext"], rq["body"], timeout=T(10.0))
        self.assertEqual(r.code, 0, r)
        put_many(nd, 0, 500)

        def status():
            code, body = nd_http(nd, "/status")
            if code != 200:
                raise OSError("status %d" % code)
            return json.loads(body)
        before = int(status()["applied_index"])
        self.assertGreaterEqual(before, 500)
        nd.kill9()
        nd.start(wait=False)
        obs = Observer(nd, status, before, "k499", "v499", b.addr)
        obs.run_until(lambda: True, T(30.0))
        self.assertEqual(obs.violations, [])
        self.assertGreater(obs.answered, 0)
        self.assertEqual(ready_log_brokers(nd), [1])


def nd_http(nd, path):
    url = "http://127.0.0.1:%d%s" % (nd.http_port, path)
    try:
        with urllib.request.urlopen(url, timeout=T(2.0)) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, ConnectionError) as e:
        raise OSError(str(e)) from None


if __name__ == "__main__":
    clusterh.main()
