"""docs/protocol.md §8 acceptance cases 1-49, one test each, against a fresh single raftns
node per test (5.x profile, plus the raftns CLI contract). Asynchronous effects are polled with a
deadline. Case 50 (stock Java brokers and clients) lives in tests/interop, not here."""

import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, observed, wait_until  # noqa: E402

A0 = dict(name="broker-a", broker_id=0, addr="127.0.0.1:10911", ha="127.0.0.1:10912")
A1 = dict(name="broker-a", broker_id=1, addr="127.0.0.1:10921", ha="127.0.0.1:10922")
B0 = dict(name="broker-b", broker_id=0, addr="127.0.0.1:20911", ha="127.0.0.1:20912")
NOT_FOUND = ("No topic route info in name server for the topic: %s\nSee " + ns.FAQ_5X +
             " for further details.")


def brokers_of(route_body):
    """{brokerName: {int id: addr}} of a TopicRouteData."""
    return {bd["brokerName"]: {int(k): v for k, v in bd["brokerAddrs"].items()}
            for bd in route_body["brokerDatas"]}


def queues_of(route_body):
    return {qd["brokerName"]: qd for qd in route_body["queueDatas"]}


class Base(harness.NodeTestCase):
    def setUp(self):
        super().setUp()
        if self.START:
            self.c = self.conn()

    # --- request helpers ---

    def reg(self, who, topics=("TopicA", "TopicB"), c=None, cluster="c1", dv=None, acting=False,
            version=479, timeout_ms=None, zone=None, crc=None, body=None, topic_kw=None):
        c = c or self.c
        if body is None:
            tcs = [ns.topic_config(t, **(topic_kw or {})) if isinstance(t, str) else t
                   for t in topics]
            body = ns.register_body(tcs, dv or ns.data_version(1, 1700000000000, 0))
        ext = ns.register_ext(who["name"], who["broker_id"], who["addr"], who["ha"], cluster,
                              body, acting=acting, timeout_ms=timeout_ms, crc=crc, zone=zone)
        return c.request(ns.REGISTER_BROKER, ext, body, version=version, timeout=T(5))

    def reg_ok(self, who, *a, **kw):
        r = self.reg(who, *a, **kw)
        self.assertEqual(r.code, 0, "register %s: %r" % (who, r))
        return r

    def unreg(self, who, c=None, cluster="c1"):
        return (c or self.c).request(ns.UNREGISTER_BROKER, {
            "brokerName": who["name"], "brokerAddr": who["addr"], "clusterName": cluster,
            "brokerId": str(who["broker_id"])}, timeout=T(5))

    def route(self, topic, version=479, c=None, **extra):
        ext = {"topic": topic}
        ext.update({k: str(v) for k, v in extra.items()})
        return (c or self.c).request(ns.GET_ROUTEINFO_BY_TOPIC, ext, version=version,
                                     timeout=T(5))

    def route_ok(self, topic, **kw):
        r = self.route(topic, **kw)
        self.assertEqual(r.code, 0, "route %s: %r" % (topic, r))
        return r.body_json()

    def assert_no_route(self, topic):
        r = self.route(topic)
        self.assertEqual((r.code, r.remark), (17, NOT_FOUND % topic), repr(r))

    def wait_no_route(self, topic, timeout=5):
        def gone():
            r = self.route(topic)
            return observed(r.code == 17, r)
        wait_until(gone, T(timeout), "route of %s gone" % topic)

    def wait_route(self, topic, pred, timeout=5, what=""):
        def ok():
            r = self.route(topic)
            return observed(r.code == 0 and pred(r.body_json()), r)
        wait_until(ok, T(timeout), what or "route of %s" % topic)

    def cluster_info(self):
        r = self.c.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(5))
        self.assertEqual(r.code, 0, repr(r))
        return r

    def put_kv(self, nsp, key, value):
        return self.c.request(ns.PUT_KV_CONFIG, {"namespace": nsp, "key": key, "value": value},
                              timeout=T(5))

    def get_kv(self, nsp, key):
        return self.c.request(ns.GET_KV_CONFIG, {"namespace": nsp, "key": key}, timeout=T(5))

    def update_config(self, props):
        body = props if isinstance(props, bytes) else ns.properties_text(props)
        return self.c.request(ns.UPDATE_NAMESRV_CONFIG, None, body, timeout=T(5))

    def get_config(self):
        r = self.c.request(ns.GET_NAMESRV_CONFIG, timeout=T(5))
        self.assertEqual(r.code, 0, repr(r))
        return ns.parse_properties(r.body)

    def topic_list(self, code, ext=None):
        r = self.c.request(code, ext, timeout=T(5))
        return r, (set(r.body_json()["topicList"]) if r.code == 0 and r.body else None)


class Framing(Base):
    def test_01_json_round_trip(self):
        r = self.c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"}, opaque=4242)
        self.assertEqual((r.code, r.flag, r.opaque, r.body, r.ser), (17, 1, 4242, b"", 0),
                         repr(r))
        self.assertTrue(r.remark.startswith(
            "No topic route info in name server for the topic: Nope"), r.remark)
        self.assertEqual(r.remark, NOT_FOUND % "Nope")
        self.assertEqual(r.version, 479)

    def test_02_binary_header(self):
        r = self.c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"}, ser=ns.SER_ROCKETMQ,
                           opaque=77)
        self.assertEqual((r.code, r.flag, r.opaque, r.remark), (17, 1, 77, NOT_FOUND % "Nope"))
        self.assertEqual(r.ser, ns.SER_ROCKETMQ, "reply type mirrors the request's")
        self.reg_ok(A0, c=self.c)
        r = self.c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"},
                           ser=ns.SER_ROCKETMQ)
        self.assertEqual((r.code, r.ser), (0, 1))
        self.assertEqual(brokers_of(r.body_json()), {"broker-a": {0: A0["addr"]}})

    def test_03_pipelining(self):
        rs = self.c.pipeline([
            dict(code=ns.GET_BROKER_CLUSTER_INFO, opaque=7),
            dict(code=ns.GET_ROUTEINFO_BY_TOPIC, ext={"topic": "Nope"}, opaque=8),
            dict(code=ns.GET_KV_CONFIG, ext={"namespace": "n", "key": "k"}, opaque=9)],
            timeout=T(5))
        self.assertEqual([(r.opaque, r.code) for r in rs], [(7, 0), (8, 17), (9, 22)])

    def test_04_oneway(self):
        self.c.request(ns.BROKER_HEARTBEAT, {"clusterName": "c1", "brokerAddr": A0["addr"],
                                             "brokerName": "broker-a"}, oneway=True)
        self.assertTrue(self.c.nothing_within(1.0), "bytes came back for a oneway request")
        r = self.c.request(ns.GET_BROKER_CLUSTER_INFO)
        self.assertEqual(r.code, 0)

    def test_05_unknown_code(self):
        r = self.c.request(99999, None, opaque=5)
        self.assertEqual((r.code, r.remark, r.opaque, r.flag),
                         (3, " request type 99999 not supported", 5, 1))

    def test_06_bad_frames_close(self):
        other = self.conn()
        hdr = ns.encode_json_header(106, opaque=1)
        bad = [
            struct.pack(">II", 4 + len(hdr), len(hdr) + 10) + hdr,          # H past frame
            struct.pack(">II", 4 + len(hdr), (2 << 24) | len(hdr)) + hdr,   # type 2
            struct.pack(">II", 16 * 1024 * 1024 + 1, len(hdr)) + hdr,       # > 16 MiB
        ]
        for i, frame in enumerate(bad):
            with self.subTest(frame=i):
                c = self.conn()
                c.send_raw(frame)
                harness.assert_closed(c, T(5), "connection closed for bad frame %d" % i)
                self.assertEqual(c.buf, bytearray(), "a reply came for bad frame %d" % i)
                self.assertEqual(other.request(ns.GET_BROKER_CLUSTER_INFO).code, 0)

    def test_07_missing_required_field(self):
        r = self.c.request(ns.GET_ROUTEINFO_BY_TOPIC, {})
        self.assertEqual((r.code, r.remark), (17, NOT_FOUND % "null"))
        self.assertEqual(self.c.request(ns.GET_BROKER_CLUSTER_INFO).code, 0)


class KV(Base):
    def test_08_put_get(self):
        r = self.put_kv("namespace", "key", "value")
        self.assertEqual((r.code, r.remark), (0, None))
        r = self.get_kv("namespace", "key")
        self.assertEqual((r.code, r.ext), (0, {"value": "value"}))

    def test_09_get_missing(self):
        r = self.get_kv("namespace", "key")
        self.assertEqual((r.code, r.remark), (22, "No config item, Namespace: namespace Key: key"))
        self.assertNotIn("value", r.ext or {})

    def test_10_delete(self):
        self.assertEqual(self.put_kv("namespace", "key", "value").code, 0)
        r = self.c.request(ns.DELETE_KV_CONFIG, {"namespace": "namespace", "key": "key"})
        self.assertEqual(r.code, 0)
        self.assertEqual(self.get_kv("namespace", "key").code, 22)
        r = self.c.request(ns.DELETE_KV_CONFIG, {"namespace": "namespace", "key": "nokey"})
        self.assertEqual(r.code, 0)

    def test_11_kvlist(self):
        r = self.c.request(ns.GET_KVLIST_BY_NAMESPACE, {"namespace": "default-namespace-1"})
        self.assertEqual((r.code, r.remark),
                         (22, "No config item, Namespace: default-namespace-1"))
        self.assertEqual(self.put_kv("default-namespace-1", "key", "value").code, 0)
        r = self.c.request(ns.GET_KVLIST_BY_NAMESPACE, {"namespace": "default-namespace-1"})
        self.assertEqual(r.code, 0)
        self.assertEqual(r.body_json(), {"table": {"key": "value"}})

    def test_12_put_without_ext(self):
        r = self.c.request(ns.PUT_KV_CONFIG, None)
        self.assertEqual((r.code, r.remark), (1, "namespace or key is null"))

    def test_13_kv_survives_restart(self):
        self.assertEqual(self.put_kv("namespace", "key", "value").code, 0)
        self.c.close()
        self.node.stop()
        self.node.start()
        self.c = self.conn()
        r = self.get_kv("namespace", "key")
        self.assertEqual((r.code, r.ext), (0, {"value": "value"}))


class Routes(Base):
    def test_14_register_and_route(self):
        r = self.reg_ok(A0)
        self.assertEqual(r.ext, {}, "master reply must carry extFields:{}")
        self.assertEqual(r.body, b"")
        r = self.route("TopicA")
        self.assertEqual(r.code, 0)
        self.assertIn(b'"brokerAddrs":{"0":"127.0.0.1:10911"}', r.body)
        rd = r.body_json()
        self.assertEqual(len(rd["brokerDatas"]), 1)
        bd = rd["brokerDatas"][0]
        self.assertEqual((bd["cluster"], bd["brokerName"], bd["brokerAddrs"]),
                         ("c1", "broker-a", {"0": "127.0.0.1:10911"}))
        self.assertIn("enableActingMaster", bd)
        self.assertEqual(rd["queueDatas"], [{"brokerName": "broker-a", "perm": 6,
                                             "readQueueNums": 4, "topicSysFlag": 0,
                                             "writeQueueNums": 4}])
        self.assertEqual(rd["filterServerTable"], {})

    def test_15_crc(self):
        body = ns.register_body([ns.topic_config("TopicA"), ns.topic_config("TopicB")])
        r = self.reg(A0, body=body, crc=ns.crc32_masked(body) + 1)
        self.assertEqual((r.code, r.remark, r.ext), (1, "crc32 not match", {}))
        self.assert_no_route("TopicA")
        ext = ns.register_ext(body=body, cluster="c1")
        del ext["bodyCrc32"]
        r = self.c.request(ns.REGISTER_BROKER, ext, body)
        self.assertEqual(r.code, 0, "absent bodyCrc32: %r" % r)
        body2 = ns.register_body(["TopicC", "TopicD"], ns.data_version(2))
        r = self.reg(A0, body=body2, crc=0)
        self.assertEqual(r.code, 0, "bodyCrc32 0: %r" % r)
        self.route_ok("TopicC")

    def test_16_slave_gets_master(self):
        self.reg_ok(A0)
        r = self.reg_ok(A1)
        self.assertEqual(r.ext, {"masterAddr": "127.0.0.1:10911",
                                 "haServerAddr": "127.0.0.1:10912"})
        self.assertEqual(brokers_of(self.route_ok("TopicA")),
                         {"broker-a": {0: A0["addr"], 1: A1["addr"]}})

    def test_17_old_slave_only(self):
        who = dict(name="broker-a", broker_id=2333, addr="10.10.1.1", ha="10.10.1.1:1")
        self.reg_ok(who, acting=None)
        r = self.cluster_info()
        self.assertIn(b'{2333:"10.10.1.1"}', r.body)
        self.assertEqual(r.body_json()["brokerAddrTable"]["broker-a"]["brokerAddrs"],
                         {"2333": "10.10.1.1"})
        self.assert_no_route("TopicA")
        self.assert_no_route("TopicB")

    def test_18_acting_slave_only(self):
        self.reg_ok(A1, acting=True)
        self.assertEqual(queues_of(self.route_ok("TopicA"))["broker-a"]["perm"], 4)
        self.reg_ok(A0, acting=True)
        for t in ("TopicA", "TopicB"):
            self.assertEqual(queues_of(self.route_ok(t))["broker-a"]["perm"], 6)

    def test_19_single_topic_guard(self):
        r = self.reg(A0, topics=["TopicA"])
        self.assertEqual((r.code, r.remark), (1, "register broker failed"))
        self.assert_no_route("TopicA")
        self.reg_ok(A0, topics=[])
        self.reg_ok(B0, topics=["TopicB", "TopicC"])
        self.route_ok("TopicB")
        self.reg_ok(A0, topics=["TopicA", "TopicD"], dv=ns.data_version(2))
        self.route_ok("TopicA")

    def test_20_order_conf_in_register_reply(self):
        r = self.reg_ok(B0)
        self.assertEqual(r.body, b"")
        self.assertEqual(self.put_kv("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4").code, 0)
        r = self.reg_ok(A0)
        self.assertEqual(r.body_json(), {"table": {"TopicA": "broker-a:4"}})

    def test_21_order_topic_conf_in_route(self):
        self.reg_ok(A0)
        self.assertEqual(self.put_kv("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4").code, 0)
        self.assertNotIn("orderTopicConf", self.route_ok("TopicA"))
        self.assertEqual(self.update_config({"orderMessageEnable": "true"}).code, 0)
        self.assertEqual(self.route_ok("TopicA").get("orderTopicConf"), "broker-a:4")
        self.assertNotIn("orderTopicConf", self.route_ok("TopicB"))

    def test_22_json_form_switch(self):
        self.reg_ok(A0)
        r = self.route("TopicA", version=479)
        self.assertIn(b'"brokerAddrs":{"0":', r.body)
        r = self.route("TopicA", version=399)
        self.assertIn(b'"brokerAddrs":{0:', r.body)
        r = self.route("TopicA", version=399, acceptStandardJsonOnly="true")
        self.assertIn(b'"brokerAddrs":{"0":', r.body)
        for v in (479, 399, 0):
            r = self.c.request(ns.GET_BROKER_CLUSTER_INFO, version=v)
            self.assertIn(b'"brokerAddrs":{0:', r.body, "106 at version %d" % v)

    def test_23_two_groups(self):
        self.reg_ok(A0, topics=["TopicA", "TopicB"])
        self.reg_ok(B0, topics=["TopicA", "TopicC"])
        rd = self.route_ok("TopicA")
        self.assertEqual(brokers_of(rd), {"broker-a": {0: A0["addr"]},
                                          "broker-b": {0: B0["addr"]}})
        self.assertEqual(set(queues_of(rd)), {"broker-a", "broker-b"})
        self.assertEqual(len(rd["queueDatas"]), 2)
        ci = self.cluster_info().body_json()
        self.assertEqual(sorted(ci["clusterAddrTable"]["c1"]), ["broker-a", "broker-b"])
        self.assertEqual(set(ci["brokerAddrTable"]), {"broker-a", "broker-b"})

    def test_24_same_version_keeps_topics(self):
        dv = ns.data_version(1)
        self.reg_ok(A0, topics=["TopicA", "TopicB"], dv=dv)
        self.reg_ok(A0, topics=["TopicB", "TopicX"], dv=dv)
        self.route_ok("TopicA")
        self.route_ok("TopicB")
        self.assertEqual(self.update_config({"deleteTopicWithBrokerRegistration": "true"}).code,
                         0)
        self.reg_ok(A0, topics=["TopicB", "TopicX"], dv=dv)
        self.assert_no_route("TopicA")
        self.route_ok("TopicB")

    def test_25_new_topic_same_version(self):
        dv = ns.data_version(1)
        self.reg_ok(A0, topics=["TopicA", "TopicB"], dv=dv)
        self.reg_ok(A0, topics=["TopicA", "TopicB", "TopicC"], dv=dv)
        self.assertEqual(brokers_of(self.route_ok("TopicC")), {"broker-a": {0: A0["addr"]}})

    def test_26_role_switch(self):
        self.reg_ok(A0)
        self.reg_ok(A1)
        self.assertEqual(self.unreg(A0).code, 0)
        self.wait_route("TopicA", lambda rd: brokers_of(rd) == {"broker-a": {1: A1["addr"]}},
                        what="only the slave left")
        new_master = dict(A1, broker_id=0)
        self.reg_ok(new_master, dv=ns.data_version(2))
        self.assertEqual(brokers_of(self.route_ok("TopicA")), {"broker-a": {0: A1["addr"]}})
        old_master = dict(A0, broker_id=1)
        self.reg_ok(old_master, dv=ns.data_version(2))
        self.assertEqual(brokers_of(self.route_ok("TopicA")),
                         {"broker-a": {0: A1["addr"], 1: A0["addr"]}})

    def test_27_master_address_change(self):
        self.reg_ok(A0)
        other = dict(A0, addr="127.0.0.1:10931", ha="127.0.0.1:10932")
        self.reg_ok(other)
        self.assertEqual(brokers_of(self.route_ok("TopicA")), {"broker-a": {0: other["addr"]}})

    def test_28_state_version_conflict(self):
        self.reg_ok(A0, dv=ns.data_version(1, state_version=5))
        other = dict(A0, addr="127.0.0.1:10931", ha="127.0.0.1:10932")
        r = self.reg_ok(other, dv=ns.data_version(1, state_version=3))
        self.assertEqual(r.ext, {})
        self.assertEqual(brokers_of(self.route_ok("TopicA")), {"broker-a": {0: A0["addr"]}})

    def test_29_query_data_version(self):
        dv = ns.data_version(3, 1700000000123, 0)
        self.reg_ok(A0, dv=dv)
        ext = {"brokerName": "broker-a", "brokerAddr": A0["addr"], "clusterName": "c1",
               "brokerId": "0"}
        r = self.c.request(ns.QUERY_DATA_VERSION, ext, ns.dumps_java(dv).encode())
        self.assertEqual((r.code, r.ext), (0, {"changed": "false"}), repr(r))
        self.assertEqual(r.body_json(), dv)
        r = self.c.request(ns.QUERY_DATA_VERSION, ext,
                           ns.dumps_java(dict(dv, counter=4)).encode())
        self.assertEqual((r.code, r.ext), (0, {"changed": "true"}), repr(r))
        self.assertEqual(r.body_json(), dv)
        ext2 = dict(ext, brokerName="broker-z", brokerAddr="127.0.0.1:1")
        r = self.c.request(ns.QUERY_DATA_VERSION, ext2, ns.dumps_java(dv).encode())
        self.assertEqual((r.code, r.ext, r.body), (0, {"changed": "true"}, b""), repr(r))


class Removal(Base):
    def test_30_unregister_only_member(self):
        self.reg_ok(A0)
        self.assertEqual(self.unreg(A0).code, 0)
        self.wait_no_route("TopicA")
        self.assert_no_route("TopicB")
        def empty():
            info = self.cluster_info().body_json()
            return observed(info == {"brokerAddrTable": {}, "clusterAddrTable": {}}, info)
        wait_until(empty, T(5), "empty cluster info")

    def test_31_unregister_slave(self):
        self.reg_ok(A0)
        self.reg_ok(A1)
        self.assertEqual(self.unreg(A1).code, 0)
        self.wait_route("TopicA", lambda rd: brokers_of(rd) == {"broker-a": {0: A0["addr"]}})

    def test_33_batch_unregister(self):
        self.reg_ok(A0, topics=["TopicA", "TopicB"])
        self.reg_ok(B0, topics=["TopicC", "TopicD"])
        rs = self.c.pipeline([
            dict(code=ns.UNREGISTER_BROKER, ext={"brokerName": "broker-a", "brokerAddr":
                                                 A0["addr"], "clusterName": "c1",
                                                 "brokerId": "0"}),
            dict(code=ns.UNREGISTER_BROKER, ext={"brokerName": "broker-b", "brokerAddr":
                                                 B0["addr"], "clusterName": "c1",
                                                 "brokerId": "0"})], timeout=T(5))
        self.assertEqual([r.code for r in rs], [0, 0])
        for t in ("TopicA", "TopicB", "TopicC", "TopicD"):
            self.wait_no_route(t)
        def gone():
            table = self.cluster_info().body_json()["brokerAddrTable"]
            return observed(table == {}, table)
        wait_until(gone, T(5), "both groups gone")

    def test_34_connection_close(self):
        z = self.conn()
        self.reg_ok(B0, topics=["TopicZ1", "TopicZ2"], c=z)
        client = self.conn()
        self.assertEqual(client.request(ns.GET_BROKER_CLUSTER_INFO).code, 0)
        client.close()
        x = ns.Conn(self.node.addr)
        self.reg_ok(A0, c=x)
        self.route_ok("TopicA")
        x.close()
        self.wait_no_route("TopicA")
        x2, y = ns.Conn(self.node.addr), ns.Conn(self.node.addr)
        self.addCleanup(y.close)
        self.reg_ok(A0, c=x2)
        self.reg_ok(A1, c=y)
        x2.close()
        self.wait_route("TopicA", lambda rd: brokers_of(rd) == {"broker-a": {1: A1["addr"]}})
        y.close()
        self.wait_no_route("TopicA")
        self.assertEqual(brokers_of(self.route_ok("TopicZ1")), {"broker-b": {0: B0["addr"]}})

    def test_35_expiry(self):
        x, y = self.conn(), self.conn()
        t0 = time.monotonic()
        self.reg_ok(A0, topics=["TopicA", "TopicB"], c=x, timeout_ms=3000)
        self.reg_ok(B0, topics=["TopicC", "TopicD"], c=y, timeout_ms=3000)
        hb = {"clusterName": "c1", "brokerAddr": B0["addr"], "brokerName": "broker-b"}
        limit = 3 + T(8)  # its 3 s timeout, then the expiry scan and the 106 answer
        gone = closed = None
        next_hb = time.monotonic()
        while time.monotonic() - t0 < max(limit, 10):
            now = time.monotonic()
            if now >= next_hb:
                y.request(ns.BROKER_HEARTBEAT, hb, oneway=True)
                next_hb = now + 1.0
            if gone is None and self.route("TopicA").code == 17:
                gone = now - t0
            if closed is None and x.wait_closed(0.05):
                closed = now - t0
            r = self.route("TopicC")
            self.assertEqual(r.code, 0, "heartbeating broker-b expired after %.1fs" %
                             (now - t0))
            if gone is not None and closed is not None and now - t0 > 10:
                break
            time.sleep(0.2)
        self.assertIsNotNone(gone, harness.expired("silent broker-a removed", limit,
                                                   "TopicA still routable"))
        self.assertGreaterEqual(gone, 2.5, "broker-a removed before its 3 s timeout")
        self.assertIsNotNone(closed, "silent broker-a's connection not closed")
        self.assertFalse(y.eof, "heartbeating broker's connection was closed")


class ActingMaster(Base):
    node_sets = {"supportActingMaster": "true"}

    def test_32_acting_master(self):
        self.reg_ok(A0, acting=True)
        self.reg_ok(A1, acting=True)
        self.assertEqual(self.unreg(A0).code, 0)

        def acting(rd):
            return brokers_of(rd) == {"broker-a": {0: A1["addr"]}} and \
                queues_of(rd)["broker-a"]["perm"] == 4
        self.wait_route("TopicA", acting, what="slave shown as acting master, perm 4")
        C0 = dict(name="broker-c", broker_id=0, addr="127.0.0.1:30911", ha="127.0.0.1:30912")
        C1 = dict(name="broker-c", broker_id=1, addr="127.0.0.1:30921", ha="127.0.0.1:30922")
        self.reg_ok(C0, topics=["TopicX", "TopicY"], acting=False)
        self.reg_ok(C1, topics=["TopicX", "TopicY"], acting=False)
        self.assertEqual(self.unreg(C0).code, 0)

        def plain(rd):
            return brokers_of(rd) == {"broker-c": {1: C1["addr"]}} and \
                queues_of(rd)["broker-c"]["perm"] == 6
        self.wait_route("TopicX", plain, what="slave under id 1, perm 6")


class Admin(Base):
    def test_36_write_perm(self):
        self.reg_ok(A0)
        r = self.c.request(ns.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
        self.assertEqual((r.code, r.ext), (0, {"wipeTopicCount": "2"}))
        for t in ("TopicA", "TopicB"):
            self.assertEqual(queues_of(self.route_ok(t))["broker-a"]["perm"], 4)
        r = self.c.request(ns.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
        self.assertEqual((r.code, r.ext), (0, {"addTopicCount": "2"}))
        for t in ("TopicA", "TopicB"):
            self.assertEqual(queues_of(self.route_ok(t))["broker-a"]["perm"], 6)
        self.reg_ok(B0, topics=[ns.topic_config("TopicC", perm=7),
                                ns.topic_config("TopicD", perm=4)])
        r = self.c.request(ns.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-b"})
        self.assertEqual((r.code, r.ext), (0, {"addTopicCount": "2"}))
        for t in ("TopicC", "TopicD"):
            self.assertEqual(queues_of(self.route_ok(t))["broker-b"]["perm"], 6)
        r = self.c.request(ns.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "nobody"})
        self.assertEqual((r.code, r.ext), (0, {"wipeTopicCount": "0"}))
        r = self.c.request(ns.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "nobody"})
        self.assertEqual((r.code, r.ext), (0, {"addTopicCount": "0"}))

    def test_37_delete_topic(self):
        self.reg_ok(A0, topics=["TopicA", "TopicX"])
        C0 = dict(name="broker-c", broker_id=0, addr="127.0.0.1:30911", ha="127.0.0.1:30912")
        self.reg_ok(C0, topics=["TopicX", "TopicY"], cluster="c2")
        r = self.c.request(ns.DELETE_TOPIC_IN_NAMESRV, {"topic": "TopicA"})
        self.assertEqual(r.code, 0)
        self.assert_no_route("TopicA")
        r = self.c.request(ns.DELETE_TOPIC_IN_NAMESRV, {"topic": "TopicX", "clusterName": "c1"})
        self.assertEqual(r.code, 0)
        rd = self.route_ok("TopicX")
        self.assertEqual(set(queues_of(rd)), {"broker-c"})
        self.assertEqual(set(brokers_of(rd)), {"broker-c"})

    def test_38_all_topic_list(self):
        self.reg_ok(A0, topics=["TopicA", "TopicB"])
        self.reg_ok(B0, topics=["TopicC", "TopicD"])
        r, tl = self.topic_list(ns.GET_ALL_TOPIC_LIST)
        self.assertEqual((r.code, tl), (0, {"TopicA", "TopicB", "TopicC", "TopicD"}))
        self.assertEqual(self.update_config({"enableAllTopicList": "false"}).code, 0)
        r = self.c.request(ns.GET_ALL_TOPIC_LIST)
        self.assertEqual((r.code, r.remark), (1, "disable"))

    def test_39_topics_by_cluster(self):
        self.reg_ok(A0, topics=["TopicA", "TopicB"])
        C0 = dict(name="broker-c", broker_id=0, addr="127.0.0.1:30911", ha="127.0.0.1:30912")
        self.reg_ok(C0, topics=["TopicC", "TopicD"], cluster="c2")
        r, tl = self.topic_list(ns.GET_TOPICS_BY_CLUSTER, {"cluster": "c1"})
        self.assertEqual((r.code, tl), (0, {"TopicA", "TopicB"}))
        r = self.c.request(ns.GET_TOPICS_BY_CLUSTER, {"cluster": "nope"})
        self.assertEqual((r.code, r.body_json()), (0, {"topicList": []}))
        self.assertEqual(self.update_config({"enableTopicList": "false"}).code, 0)
        for code, ext in ((ns.GET_TOPICS_BY_CLUSTER, {"cluster": "c1"}),
                          (ns.GET_UNIT_TOPIC_LIST, None), (ns.GET_HAS_UNIT_SUB_TOPIC_LIST, None),
                          (ns.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, None)):
            r = self.c.request(code, ext)
            self.assertEqual((r.code, r.remark), (1, "disable"), "code %d" % code)

    def test_40_system_topic_list(self):
        self.reg_ok(A0)
        r = self.c.request(ns.GET_SYSTEM_TOPIC_LIST)
        self.assertEqual(r.code, 0)
        b = r.body_json()
        self.assertTrue({"c1", "broker-a"} <= set(b["topicList"]), repr(b))
        self.assertEqual(b.get("brokerAddr"), "127.0.0.1:10911")

    def test_41_unit_lists(self):
        self.reg_ok(A0, topics=[ns.topic_config("U0", sys_flag=0),
                                ns.topic_config("U1", sys_flag=1),
                                ns.topic_config("U2", sys_flag=2),
                                ns.topic_config("U3", sys_flag=3)])
        for code, want in ((ns.GET_UNIT_TOPIC_LIST, {"U1", "U3"}),
                           (ns.GET_HAS_UNIT_SUB_TOPIC_LIST, {"U2", "U3"}),
                           (ns.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, {"U2"})):
            r, tl = self.topic_list(code)
            self.assertEqual((r.code, tl), (0, want), "code %d" % code)

    def test_42_register_topic(self):
        body = (b'{"brokerDatas":[],"filterServerTable":{},"queueDatas":[{"brokerName":'
                b'"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}')
        r = self.c.request(ns.REGISTER_TOPIC_IN_NAMESRV, {"topic": "TopicZ"}, body)
        self.assertEqual(r.code, 0)
        self.assert_no_route("TopicZ")
        self.reg_ok(A0)
        r = self.c.request(ns.REGISTER_TOPIC_IN_NAMESRV, {"topic": "TopicZ"}, body)
        self.assertEqual(r.code, 0)
        rd = self.route_ok("TopicZ")
        self.assertEqual(queues_of(rd)["broker-a"]["readQueueNums"], 8)

    def test_43_member_group(self):
        self.reg_ok(A0)
        self.reg_ok(A1)
        r = self.c.request(ns.GET_BROKER_MEMBER_GROUP, {"clusterName": "c1",
                                                        "brokerName": "broker-a"})
        self.assertEqual(r.code, 0)
        g = r.body_json()["brokerMemberGroup"]
        self.assertEqual(g["brokerAddrs"], {"0": A0["addr"], "1": A1["addr"]})
        self.assertEqual((g["cluster"], g["brokerName"]), ("c1", "broker-a"))
        r = self.c.request(ns.GET_BROKER_MEMBER_GROUP, {"clusterName": "c1",
                                                        "brokerName": "nope"})
        self.assertEqual(r.code, 0)
        self.assertEqual(r.body_json()["brokerMemberGroup"]["brokerAddrs"], {})


class Config(Base):
    def test_44_blacklist(self):
        self.assertEqual(self.update_config({"enableTopicList": "true"}).code, 0)
        before = self.get_config()
        target = os.path.join(self.node.workdir, "evil.properties")
        for key in ("configStorePath", "kvConfigPath", "configBlackList", "rocketmqHome"):
            for mixed in (False, True):
                props = {key: target}
                if mixed:
                    props = {"enableTopicList": "false", key: target}
                r = self.update_config(props)
                self.assertEqual((r.code, r.remark),
                                 (16, "Can not update config in black list."), repr(props))
        self.assertEqual(self.get_config(), before)
        self.assertFalse(os.path.exists(target), "a file was created at the requested path")

    def test_45_unknown_key_and_get_config(self):
        before = self.get_config()
        # Java ignores unknown keys silently; raftns refuses the whole update, so a typo is
        # never mistaken for a change (issue 8; test_config_update.py has the full table).
        r = self.update_config(b"key=value")
        self.assertEqual((r.code, r.remark), (1, "key: unknown setting"), repr(r))
        self.assertEqual(self.update_config({"orderMessageEnable": "true"}).code, 0)
        r = self.c.request(ns.GET_NAMESRV_CONFIG)
        self.assertEqual(r.code, 0)
        lines = [ln for ln in r.body.decode().split("\n") if ln]
        keys = [ln.split("=", 1)[0] for ln in lines]
        self.assertEqual(keys, sorted(keys), "319 body not sorted by key")
        after = ns.parse_properties(r.body)
        self.assertNotIn("key", after)
        self.assertEqual(after.get("orderMessageEnable"), "true")
        before["orderMessageEnable"] = "true"
        self.assertEqual(after, before)

    def test_47_zone_filter(self):
        self.reg_ok(A0, topics=["TopicA", "TopicB"], zone="zone1")
        self.reg_ok(B0, topics=["TopicA", "TopicB"], zone="zone2")
        C1 = dict(name="broker-c", broker_id=1, addr="127.0.0.1:30921", ha="127.0.0.1:30922")
        self.reg_ok(C1, topics=["TopicA", "TopicB"], zone="zone2", acting=True)
        r = self.route("TopicA", __ZONE_MODE="true", __ZONE_NAME="zone1")
        self.assertEqual(r.code, 0)
        rd = r.body_json()
        self.assertEqual(set(brokers_of(rd)), {"broker-a", "broker-c"})
        self.assertEqual(set(queues_of(rd)), {"broker-a", "broker-c"})
        self.assertTrue(ns.has_bare_int_keys(r.body), "zone-filtered reply is legacy JSON")
        rd = self.route_ok("TopicA")
        self.assertEqual(set(brokers_of(rd)), {"broker-a", "broker-b", "broker-c"})

    def test_48_compressed_registration(self):
        body = ns.compressed_register_body(["TopicA", "TopicB"], version=409)
        self.assertEqual(body[:2], b"\x78\xda")
        ext = ns.register_ext(cluster="c1", body=body, compressed=True, acting=None)
        r = self.c.request(ns.REGISTER_BROKER, ext, body, version=409)
        self.assertEqual(r.code, 0, repr(r))
        for t in ("TopicA", "TopicB"):
            q = queues_of(self.route_ok(t))["broker-a"]
            self.assertEqual((q["perm"], q["readQueueNums"], q["topicSysFlag"]), (6, 4, 0))

    def test_49_legacy_body_shape(self):
        body = ns.register_body(["TopicA", "TopicB"])
        r = self.c.request(ns.REGISTER_BROKER, ns.register_ext(cluster="c1", body=body), body,
                           version=0)
        self.assertEqual(r.code, 0, repr(r))
        self.assert_no_route("TopicA")
        self.assert_no_route("TopicB")


class WaitForService(Base):
    START = False

    def test_46_need_wait_for_service(self):
        t0 = time.monotonic()
        node = self.new_node({"needWaitForService": "true", "waitSecondsForService": "3"},
                             start=False)
        node.start(wait=False)
        # Readiness is probed with 106, which is not gated; 105 is.
        node.wait_ready()
        c = self.conn(node)
        first = self.route("Nope", c=c)
        if time.monotonic() - t0 < 2.5:
            self.assertEqual((first.code, first.remark), (1, "name server not ready"))
        def normal():
            r = self.route("Nope", c=c)
            return observed(r.code == 17, r)
        wait_until(normal, T(10), "route answers normally after waitSecondsForService")
        self.assertGreaterEqual(time.monotonic() - t0, 2.5, "gate opened before 3 s")


if __name__ == "__main__":
    harness.main()
