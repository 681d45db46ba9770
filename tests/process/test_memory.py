"""Issue 11 items 1 and 4 on a real process: a client older than 5.0 gets route and cluster
replies with exactly the fields Java 4.9.8 writes (tests/vectors/java-4.9.8 samples 06, 14,
05), a 5.x client gets the 5.x fields; big cached replies pipelined on one connection arrive
whole and in order (they are written from shared buffers); the reply cache's metrics are
in /metrics and count; the raft log is snapshotted by bytes (snapshotBytes), not only after
4096 entries, and a restart from that snapshot has every topic."""

import json
import os
import socket
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, wait_until  # noqa: E402

VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors",
                       "java-4.9.8")
GET_CLUSTER_INFO = 106


def metrics(node):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % node.http_port,
                                timeout=T(5.0)) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def register(conn, name, addr, topics, counter=1, acting=False):
    body = ns.register_body([ns.topic_config(t) if isinstance(t, str) else t for t in topics],
                            ns.data_version(counter))
    ext = ns.register_ext(name, 0, addr, addr, "DefaultCluster", body, acting=acting)
    r = conn.request(ns.REGISTER_BROKER, ext, body, timeout=T(10.0))
    assert r.code == 0, r
    return r


def key_shape(obj):
    """The property names of a TopicRouteData/ClusterInfo at every level (values dropped)."""
    if isinstance(obj, dict):
        if all(k.lstrip("-").isdigit() for k in obj) and obj:
            return {"<id>": key_shape(next(iter(obj.values())))}
        return {k: key_shape(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [key_shape(obj[0])] if obj else []
    return None


def recorded_body(stem):
    with open(os.path.join(VECTORS, stem + ".body"), "rb") as f:
        return f.read()


class OldClients(harness.NodeTestCase):

    def setUp(self):
        super().setUp()
        self.c = self.conn()
        # Two topics: 5.x refuses a first registration of only one (PROTOCOL §5.2).
        register(self.c, "broker-a", "127.0.0.1:10911", ["TestTopic", "OtherTopic"])

    def route(self, version, **kw):
        r = self.c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "TestTopic"}, version=version,
                           **kw)
        self.assertEqual(r.code, 0, r)
        return r.body

    def test_route_fields_are_java_498s(self):
        # 409 = 4.9.8, standard JSON (sample 06); 373 = 4.9.3, legacy bare keys (sample 14).
        for version, stem in ((409, "06_route_TestTopic"),
                              (373, "14_route_TestTopic_v4_9_3_client")):
            body = self.route(version)
            want = recorded_body(stem)
            self.assertEqual(ns.has_bare_int_keys(body.decode()),
                             ns.has_bare_int_keys(want.decode()), version)
            self.assertEqual(key_shape(ns.loads_tolerant(body)),
                             key_shape(ns.loads_tolerant(want)), version)
            # Same broker, address and topic as the recording: the same bytes.
            self.assertEqual(body, want, version)
        # A 5.x client keeps the 5.x field, and each shape is cached apart.
        new = json.loads(self.route(479))
        self.assertIn("enableActingMaster", new["brokerDatas"][0])
        self.assertNotIn(b"enableActingMaster", self.route(409))

    def test_cluster_info_fields_are_java_498s(self):
        r = self.c.request(GET_CLUSTER_INFO, version=409)
        self.assertEqual(key_shape(ns.loads_tolerant(r.body)),
                         key_shape(ns.loads_tolerant(
                             recorded_body("05_cluster_info_after_register"))))
        r = self.c.request(GET_CLUSTER_INFO, version=479)
        self.assertIn(b"enableActingMaster", r.body)

    def test_old_reply_is_smaller(self):
        self.assertLess(len(self.route(409)), len(self.route(479)))


class SharedReplies(harness.NodeTestCase):

    def test_pipelined_big_replies_whole_and_in_order(self):
        c = self.conn()
        # 80 broker groups: a reply of about 15 KB, written from the cache's shared body.
        for i in range(80):
            register(c, "broker-%02d" % i, "127.0.0.1:%d" % (20000 + i), ["Big", "Small%d" % i])
        single = c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "Big"}).body
        self.assertGreater(len(single), 8192)
        small = c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "Small3"}, version=409).body
        reqs = []
        for i in range(48):
            reqs.append({"code": ns.GET_ROUTEINFO_BY_TOPIC, "ext": {"topic": "Big"}})
            if i % 3 == 0:
                reqs.append({"code": ns.GET_ROUTEINFO_BY_TOPIC, "ext": {"topic": "Small3"},
                             "version": 409})
        replies = c.pipeline(reqs, timeout=T(20.0))
        for rq, r in zip(reqs, replies):
            self.assertEqual(r.code, 0)
            self.assertEqual(r.body, single if rq["ext"]["topic"] == "Big" else small)
        # The reads came from the cache: one body for Big, hits for the rest.
        m = metrics(self.node)
        self.assertGreaterEqual(m["raftns_route_cache_hits_total"], 48)

    def test_close_with_shared_replies_queued(self):
        c = self.conn()
        for i in range(80):
            register(c, "broker-%02d" % i, "127.0.0.1:%d" % (20000 + i), ["Big", "Small%d" % i])
        self.assertEqual(c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "Big"}).code, 0)
        base = metrics(self.node)["raftns_route_cache_hits_total"]  # cached from here on

        def asked(n):
            return b"".join(ns.build_request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "Big"},
                                             opaque=ns.Conn.new_opaque()) for _ in range(n))

        def served(n):
            m = metrics(self.node)["raftns_route_cache_hits_total"]
            return harness.observed(m >= base + n, m - base)
        # A reader that never reads: 300 replies (~5 MB) are more than the sockets buffer
        # (net.ipv4.tcp_wmem allows 4 MiB), so one write stays in flight; the next 50 wait in
        # the connection's queue of shared bodies (5.9 MB in all: below the 8 MiB that pauses
        # reading). Closing then drops both (a sanitizer build checks for the leak at exit).
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(self.node.addr)
        s.sendall(asked(300))
        wait_until(lambda: served(300), T(10.0), "300 big reads served")
        s.sendall(asked(50))
        wait_until(lambda: served(350), T(10.0), "50 more big reads served")
        s.close()
        self.assertEqual(c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "Big"}).code, 0)

    def test_cache_metrics_present_and_counting(self):
        m = metrics(self.node)
        for name in ("hits_total", "misses_total", "shared_total", "uncached_total",
                     "evictions_total", "hit_ratio", "bytes", "budget_bytes", "bodies"):
            self.assertIn("raftns_route_cache_" + name, m)
        self.assertIn("raftns_raft_log_unsnapshotted_bytes", m)
        self.assertIn("raftns_raft_log_trailing_entries", m)
        # automatic budget: at least 4 MiB
        self.assertGreaterEqual(m["raftns_route_cache_budget_bytes"], 4 << 20)
        c = self.conn()
        register(c, "broker-a", "127.0.0.1:10911", ["T1", "T2"])
        for _ in range(3):
            for t in ("T1", "T2"):
                self.assertEqual(c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": t}).code, 0)
        m2 = metrics(self.node)
        self.assertEqual(m2["raftns_route_cache_misses_total"] - m["raftns_route_cache_misses_total"], 2)
        self.assertEqual(m2["raftns_route_cache_shared_total"] - m["raftns_route_cache_shared_total"], 1)
        self.assertEqual(m2["raftns_route_cache_hits_total"] - m["raftns_route_cache_hits_total"], 4)
        self.assertEqual(m2["raftns_route_cache_bodies"], 1)
        hits, misses = m2["raftns_route_cache_hits_total"], m2["raftns_route_cache_misses_total"]
        self.assertAlmostEqual(m2["raftns_route_cache_hit_ratio"], hits / (hits + misses),
                               places=3)


class CacheBudgetSetting(harness.NodeTestCase):
    node_sets = {"routeCacheBytes": "20000"}

    def test_budget_setting_bounds_the_cache(self):
        c = self.conn()
        # Topics with different queue counts: different bodies of ~400 bytes each.
        register(c, "broker-a", "127.0.0.1:10911",
                 [ns.topic_config("Q%d" % i, read=i + 1) for i in range(200)])
        for i in range(200):
            self.assertEqual(c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "Q%d" % i}).code, 0)
        m = metrics(self.node)
        self.assertEqual(m["raftns_route_cache_budget_bytes"], 20000)
        self.assertLessEqual(m["raftns_route_cache_bytes"], 20000)
        self.assertGreater(m["raftns_route_cache_evictions_total"], 0)


class LogBoundedByBytes(harness.NodeTestCase):
    START = False

    def test_snapshot_after_bytes_and_restart_has_every_topic(self):
        node = harness.Node(extra_args=["--snapshot-bytes", "262144"])
        self.nodes.append(node)
        node.start()
        c = self.conn(node)
        topics = harness.unshared_names("Topic", 400)  # ~10 KB per registration command
        for counter in range(1, 41):
            register(c, "broker-a", "127.0.0.1:10911", topics, counter=counter)

        def snapshots():
            return [f for f in os.listdir(node.data_dir) if f.startswith("snapshot-")]
        # 40 entries, far below the 4096-entry threshold: only the byte bound snapshots.
        wait_until(lambda: harness.observed(len(snapshots()) > 0, snapshots()), T(10.0),
                   "a snapshot file in the data dir")
        m = metrics(node)
        self.assertLess(m["raftns_raft_log_unsnapshotted_bytes"], 262144 + 64 * 1024)
        self.assertLess(m["raftns_raft_log_trailing_entries"], 1024)
        c.close()
        node.stop()
        node.start()
        c2 = self.conn(node)
        r = c2.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": topics[399]})
        self.assertEqual(r.code, 0, r)
        r = c2.request(206)  # GET_ALL_TOPIC_LIST_FROM_NAMESERVER
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(json.loads(r.body)["topicList"]), 400)


if __name__ == "__main__":
    harness.main()
