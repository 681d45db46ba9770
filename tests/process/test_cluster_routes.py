"""Three real raftns nodes, write and read paths (issue 3 items 2, 3, 4, 5): a registration
through a follower is readable on all three, unchanged heartbeats write nothing to the raft log, a
broker that closes every connection disappears from every node, a broker heartbeating only to a
follower stays, and a consistent read sees a write made on another node. Failover is in
test_cluster_failover.py."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from clusterh import T, route, broker_names, cluster_brokers  # noqa: E402
from harness import observed, wait_until  # noqa: E402


class Routes(clusterh.ClusterTestCase):
    def test_register_through_follower_reads_on_all(self):
        c = self.cluster
        leader = c.leader()
        fol = c.followers(leader)[0]
        b = self.broker(name="broker-a", topics=["TopicA", "TopicB"])
        r = b.register(fol)
        self.assertEqual(r.code, 0, r)
        # The node that took the write answers only after its own state machine applied it.
        self.assertEqual(broker_names(route(fol, "TopicA")), ["broker-a"])
        for nd in c.all():
            got = wait_until(lambda nd=nd: broker_names(route(nd, "TopicB")), T(5.0),
                             "TopicB routable on node %d" % nd.id)
            self.assertEqual(got, ["broker-a"])
            rr = route(nd, "TopicA")
            self.assertEqual(rr.code, 0, rr)
            self.assertEqual(rr.body_json()["brokerDatas"][0]["brokerAddrs"],
                             {"0": "127.0.0.1:10911"})
        c.wait_converged()

    def test_unchanged_heartbeats_write_no_log_entries(self):
        c = self.cluster
        b = self.broker(name="broker-hb", addr="127.0.0.1:30911", topics=["TopicHB", "TopicHB2"])
        for nd in c.all():  # a real broker registers with every name server
            self.assertEqual(b.register(nd).code, 0)
        c.wait_converged()
        leader = c.leader()
        before = {i: st["commit_index"] for i, st in c.statuses().items()}
        # 1,000 unchanged registrations spread over the nodes, plus 904 and 322 on each.
        reg = b.register_request()
        hb = {"code": ns.BROKER_HEARTBEAT, "ext": b.heartbeat_ext()}
        sent = 0
        nodes = c.all()
        while sent < 1000:
            nd = nodes[sent % len(nodes)]
            batch = [dict(reg) for _ in range(50)] + [dict(hb) for _ in range(5)] + \
                [b.query_request() for _ in range(5)]
            replies = b.conn(nd).pipeline(batch, timeout=T(20.0))
            for rq, rp in zip(batch, replies):
                self.assertEqual(rp.code, 0, "code %d on node %d: %r" % (rq["code"], nd.id, rp))
                if rq["code"] == ns.QUERY_DATA_VERSION:
                    self.assertEqual(rp.ext.get("changed"), "false", rp)
            sent += 50
        after = {i: st["commit_index"] for i, st in c.statuses().items()}
        self.assertEqual(after, before, "heartbeats wrote log entries (leader %d)" % leader.id)
        c.wait_converged()

    def test_broker_closing_all_connections_is_gone_everywhere(self):
        c = self.cluster
        b = self.broker(name="broker-dead", addr="127.0.0.1:40911", topics=["TopicDead", "TopicDead2"])
        keep = self.broker(name="broker-keep", addr="127.0.0.1:41911", topics=["TopicKeep", "TopicKeep2"])
        for nd in c.all():
            self.assertEqual(b.register(nd).code, 0)
            self.assertEqual(keep.register(nd).code, 0)
        c.wait_converged()
        for nd in c.all():
            self.assertEqual(cluster_brokers(nd), ["broker-dead", "broker-keep"])
        b.close()  # the broker process died: every connection closes
        # Issue 3 item 9: gone from every node within 2 s (fast path, not the 120 s timeout).
        for nd in c.all():
            wait_until(lambda nd=nd: (lambda r: observed(
                r.code == clusterh.TOPIC_NOT_EXIST, r))(route(nd, "TopicDead")),
                T(2.0), "TopicDead gone on node %d" % nd.id)
        for nd in c.all():
            self.assertEqual(cluster_brokers(nd), ["broker-keep"])
        c.wait_converged()

    def test_consistent_read_sees_write_on_other_node(self):
        c = self.cluster
        nodes = c.all()
        b = self.broker(name="broker-cr", addr="127.0.0.1:42911", topics=["TopicCRBase"])
        for i in range(12):
            writer, reader = nodes[i % 3], nodes[(i + 1) % 3]
            topic = "TopicCR%d" % i
            b.topics.append(topic)
            b.counter += 1
            self.assertEqual(b.register(writer).code, 0)
            r = route(reader, topic, consistent=True)
            self.assertEqual(r.code, 0, "write on node %d, consistent read on node %d: %r"
                             % (writer.id, reader.id, r))
            self.assertEqual(broker_names(r), ["broker-cr"])
            kv = writer.request(ns.PUT_KV_CONFIG, {"namespace": "NS_CR", "key": "k%d" % i,
                                                   "value": "v%d" % i})
            self.assertEqual(kv.code, 0, kv)
            g = reader.request(ns.GET_KV_CONFIG, {"namespace": "NS_CR", "key": "k%d" % i,
                                                  "raftnsConsistent": "true"})
            self.assertEqual((g.code, (g.ext or {}).get("value")), (0, "v%d" % i), g)
        c.wait_converged()


class Expiry(clusterh.ClusterTestCase):
    # Short scan so the silent broker expires soon; the heartbeating one must outlive it.
    NAMESRV = {"scanNotActiveBrokerInterval": 1000}

    def test_broker_heartbeating_to_follower_stays(self):
        c = self.cluster
        fol = c.followers()[0]
        alive = self.broker(name="broker-live", addr="127.0.0.1:43911", topics=["TopicLive", "TopicLive2"],
                            timeout_ms=3000)
        silent = self.broker(name="broker-silent", addr="127.0.0.1:44911",
                             topics=["TopicSilent", "TopicSilent2"], timeout_ms=3000)
        self.assertEqual(alive.register(fol).code, 0)
        self.assertEqual(silent.register(fol).code, 0)  # connection stays open, no heartbeats
        c.wait_converged()
        deadline = time.monotonic() + T(30.0)
        while True:
            alive.heartbeat(fol, oneway=True)
            codes = {nd.id: route(nd, "TopicSilent").code for nd in c.all()}
            if all(code == clusterh.TOPIC_NOT_EXIST for code in codes.values()):
                break
            self.assertLess(time.monotonic(), deadline, harness.expired(
                "the silent broker (timeout 3 s) expired on every node", T(30.0),
                "TopicSilent route codes per node %r" % codes))
            time.sleep(0.5)
        # The silent broker is past its timeout everywhere; the heartbeating one is not.
        for nd in c.all():
            self.assertEqual(cluster_brokers(nd), ["broker-live"], "node %d" % nd.id)
            self.assertEqual(broker_names(route(nd, "TopicLive")), ["broker-live"])
        c.wait_converged()


if __name__ == "__main__":
    clusterh.main()
