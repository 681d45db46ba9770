"""Restart durability of a single raftns node: after SIGTERM (exit 0) or kill -9 and a restart
on the same data dir, routes, KV entries and settings answer exactly as before, and every
acknowledged write survives. Multi-node recovery is tested in tests/cluster and tests/jepsen."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T  # noqa: E402
from test_vectors import canon  # noqa: E402

A0 = dict(name="broker-a", broker_id=0, addr="127.0.0.1:10911", ha="127.0.0.1:10912")
B0 = dict(name="broker-b", broker_id=0, addr="127.0.0.1:20911", ha="127.0.0.1:20912")


def register(c, who, topics, counter=1):
    body = ns.register_body(topics, ns.data_version(counter))
    ext = ns.register_ext(who["name"], who["broker_id"], who["addr"], who["ha"], "c1", body)
    return c.request(ns.REGISTER_BROKER, ext, body, timeout=T(5))


def snapshot(c):
    """Everything the test compares across a restart, as (code, ext, data) tuples."""
    out = {}
    for t in ("TopicA", "TopicB", "TopicC", "Nope"):
        r = c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": t}, timeout=T(5))
        out["route " + t] = (r.code, r.remark, canon(r.body_json()) if r.body else None)
    r = c.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(5))
    out["cluster"] = (r.code, canon(r.body_json()))
    r = c.request(ns.GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicA"},
                  timeout=T(5))
    out["kv"] = (r.code, r.ext)
    r = c.request(ns.GET_KVLIST_BY_NAMESPACE, {"namespace": "ORDER_TOPIC_CONFIG"},
                  timeout=T(5))
    out["kvlist"] = (r.code, r.body_json() if r.body else None)
    r = c.request(ns.GET_NAMESRV_CONFIG, timeout=T(5))
    out["config"] = (r.code, r.body)
    r = c.request(ns.GET_ALL_TOPIC_LIST, timeout=T(5))
    out["topics"] = (r.code, canon(r.body_json()) if r.body else None)
    return out


class Restart(harness.NodeTestCase):
    def populate(self, c):
        self.assertEqual(register(c, A0, ["TopicA", "TopicB"]).code, 0)
        r = c.request(ns.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicA",
                                         "value": "broker-a:4"})
        self.assertEqual(r.code, 0)
        r = c.request(ns.UPDATE_NAMESRV_CONFIG, None,
                      ns.properties_text({"orderMessageEnable": "true"}))
        self.assertEqual(r.code, 0)

    def assert_same(self, before, after):
        diffs = ["%s: before %r\n    after %r" % (k, before[k], after.get(k))
                 for k in before if after.get(k) != before[k]]
        self.assertFalse(diffs, "differs after restart:\n  " + "\n  ".join(diffs))

    def broker_conn(self):
        """The broker's connection stays open until the server goes down: closing it would
        (rightly) unregister the broker (case 34)."""
        b = ns.Conn(self.node.addr)
        self.addCleanup(b.close)
        return b

    def test_sigterm_restart(self):
        b = self.broker_conn()
        self.populate(b)
        with ns.Conn(self.node.addr) as c:
            before = snapshot(c)
        self.assertEqual(before["route TopicA"][0], 0)
        self.assertEqual(before["route TopicA"][2].get("orderTopicConf"), "broker-a:4")
        self.assertEqual(ns.parse_properties(before["config"][1]).get("orderMessageEnable"),
                         "true")
        self.assertEqual(self.node.stop(), 0)
        self.node.start()
        with ns.Conn(self.node.addr) as c:
            after = snapshot(c)
        self.assert_same(before, after)
        # And a second clean restart changes nothing either.
        self.node.stop()
        self.node.start()
        with ns.Conn(self.node.addr) as c:
            self.assert_same(before, snapshot(c))

    def test_kill9_keeps_acknowledged_writes(self):
        b = self.broker_conn()
        self.populate(b)
        with ns.Conn(self.node.addr) as c:
            for i in range(50):
                r = c.request(ns.PUT_KV_CONFIG, {"namespace": "bulk", "key": "k%03d" % i,
                                                 "value": "v%d" % i}, timeout=T(5))
                self.assertEqual(r.code, 0)
            self.assertEqual(register(b, B0, ["TopicB", "TopicC"]).code, 0)
            r = c.request(ns.DELETE_KV_CONFIG, {"namespace": "bulk", "key": "k000"})
            self.assertEqual(r.code, 0)
            before = snapshot(c)
        self.node.kill9()
        self.node.start()
        with ns.Conn(self.node.addr) as c:
            after = snapshot(c)
            r = c.request(ns.GET_KVLIST_BY_NAMESPACE, {"namespace": "bulk"}, timeout=T(5))
            self.assertEqual(r.code, 0, repr(r))
            want = {"k%03d" % i: "v%d" % i for i in range(1, 50)}
            self.assertEqual(r.body_json(), {"table": want})
        self.assert_same(before, after)
        names = {bd["brokerName"] for bd in after["route TopicB"][2]["brokerDatas"]}
        self.assertEqual(names, {"broker-a", "broker-b"})
    def test_many_writes_across_snapshots_and_restarts(self):
        """Enough entries to cross the default snapshot threshold (4096), then alternate
        kill -9 and SIGTERM restarts with more writes in between."""
        total = 0
        with ns.Conn(self.node.addr) as c:
            for batch in range(20):
                reqs = [dict(code=ns.PUT_KV_CONFIG, ext={"namespace": "big", "key": "k%05d" % i,
                                                         "value": "v%d" % i})
                        for i in range(batch * 250, batch * 250 + 250)]
                self.assertEqual({r.code for r in c.pipeline(reqs, timeout=T(30))}, {0})
            total = 5000
        for cycle, hard in enumerate((True, False, True)):
            if hard:
                self.node.kill9()
            else:
                self.assertEqual(self.node.stop(), 0)
            self.node.start()
            with ns.Conn(self.node.addr) as c:
                r = c.request(ns.GET_KVLIST_BY_NAMESPACE, {"namespace": "big"}, timeout=T(10))
                self.assertEqual(r.code, 0, repr(r))
                table = r.body_json()["table"]
                self.assertEqual(len(table), total, "cycle %d (%s): %d of %d entries" % (
                    cycle, "kill -9" if hard else "SIGTERM", len(table), total))
                self.assertEqual(table, {"k%05d" % i: "v%d" % i for i in range(total)})
                reqs = [dict(code=ns.PUT_KV_CONFIG, ext={"namespace": "big",
                                                         "key": "k%05d" % i, "value": "v%d" % i})
                        for i in range(total, total + 100)]
                self.assertEqual({r.code for r in c.pipeline(reqs, timeout=T(30))}, {0})
                total += 100


if __name__ == "__main__":
    harness.main()
