"""mqadmin's name-server commands in raftnsctl (wipe-write-perm, add-write-perm, delete-topic,
kv, brokers): each has the effect the stock code (205, 327, 216, 100-102, 219, 106) has when a
client sends it directly, checked on the same cluster by doing one with raftnsctl and the
inverse or the same again with the stock code and comparing the routes, topic lists and KV
tables; `brokers` names every broker of 106 with the last heartbeat each member heard and its
timeout; every --json output uses camelCase keys."""

import json
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import nsclient as ns  # noqa: E402
from clusterh import T  # noqa: E402
from harness import observed, wait_until  # noqa: E402

RAFTNSCTL = os.environ.get("RAFTNSCTL_BIN", "/work/main/build/raftnsctl")
SECRET = "raftns-test-secret"
CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")


def ctl(nodes, *args):
    a = [RAFTNSCTL, "--secret", SECRET, "--timeout-ms", str(int(T(10.0) * 1000))]
    for nd in nodes:
        a += ["-n", "127.0.0.1:%d" % nd.client_port]
    return subprocess.run(a + [str(x) for x in args], capture_output=True, timeout=T(60.0),
                          text=True)


def camel_keys(doc, path="$"):
    """The keys of doc (recursively) that are not camelCase, with their path."""
    bad = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if not CAMEL.match(k):
                bad.append("%s.%s" % (path, k))
            bad += camel_keys(v, "%s.%s" % (path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            bad += camel_keys(v, "%s[%d]" % (path, i))
    return bad


class MqadminCli(clusterh.ClusterTestCase):

    def json_of(self, r):
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(camel_keys(doc), [], r.stdout)
        return doc

    def perms(self, nd, topic):
        r = clusterh.route(nd, topic)
        self.assertEqual(r.code, 0, r.remark)
        return {q["brokerName"]: q["perm"] for q in r.body_json()["queueDatas"]}

    def test_write_perm_like_205_and_327(self):
        c = self.cluster
        leader = c.leader()
        b = self.broker(name="broker-w", addr="127.0.0.1:45951", topics=["TopicW1", "TopicW2"])
        self.assertEqual(b.register(leader).code, 0)
        c.wait_converged()
        before = self.perms(leader, "TopicW1")
        self.assertEqual(before, {"broker-w": 6})

        doc = self.json_of(ctl([leader], "--json", "wipe-write-perm", "broker-w"))
        self.assertEqual(doc, {"brokerName": "broker-w", "wipeTopicCount": 2})
        c.wait_converged()
        wiped = {nd.id: self.perms(nd, "TopicW1") for nd in c.all()}
        self.assertEqual(wiped, {nd.id: {"broker-w": 4} for nd in c.all()})

        # the stock 327 undoes it exactly, and the stock 205 redoes it exactly
        r = leader.request(ns.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-w"})
        self.assertEqual((r.code, r.ext.get("addTopicCount")), (0, "2"))
        self.assertEqual(self.perms(leader, "TopicW1"), before)
        r = leader.request(ns.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-w"})
        self.assertEqual((r.code, r.ext.get("wipeTopicCount")), (0, "2"))
        self.assertEqual(self.perms(leader, "TopicW1"), wiped[leader.id])

        follower = c.followers(leader)[0]
        r = ctl([follower], "add-write-perm", "broker-w")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("added write permission of 2 topic(s) of broker-w", r.stdout)
        self.assertEqual(self.perms(follower, "TopicW2"), before)
        # an unknown broker: what the stock code answers (count 0)
        doc = self.json_of(ctl([leader], "--json", "wipe-write-perm", "no-such-broker"))
        r = leader.request(ns.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "no-such-broker"})
        self.assertEqual(doc["wipeTopicCount"], int(r.ext.get("wipeTopicCount", "0")))

    def test_delete_topic_like_216(self):
        c = self.cluster
        leader = c.leader()
        b = self.broker(name="broker-d", addr="127.0.0.1:45961",
                        topics=["TopicD1", "TopicD2", "TopicD3", "TopicD4"])
        self.assertEqual(b.register(leader).code, 0)

        def topics():
            r = leader.request(ns.GET_ALL_TOPIC_LIST)
            self.assertEqual(r.code, 0)
            return sorted(t for t in r.body_json()["topicList"] if t.startswith("TopicD"))

        doc = self.json_of(ctl([leader], "--json", "delete-topic", "TopicD1"))
        self.assertEqual(doc, {"topic": "TopicD1", "deleted": True})
        after_ctl = topics()
        r = leader.request(ns.DELETE_TOPIC_IN_NAMESRV, {"topic": "TopicD2"})
        self.assertEqual(r.code, 0, r.remark)
        after_stock = topics()
        self.assertEqual(after_ctl, ["TopicD2", "TopicD3", "TopicD4"])
        self.assertEqual(after_stock, ["TopicD3", "TopicD4"])
        self.assertEqual(clusterh.route(leader, "TopicD1").code,
                         clusterh.route(leader, "TopicD2").code)
        self.assertEqual(clusterh.route(leader, "TopicD1").code, ns.TOPIC_NOT_EXIST)
        # --cluster: another cluster's name leaves the topic, as clusterName does on 216
        r = ctl([leader], "delete-topic", "TopicD3", "--cluster", "other")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = leader.request(ns.DELETE_TOPIC_IN_NAMESRV, {"topic": "TopicD4",
                                                        "clusterName": "other"})
        self.assertEqual(r.code, 0, r.remark)
        self.assertEqual(topics(), ["TopicD3", "TopicD4"])
        r = ctl([leader], "delete-topic", "TopicD3", "--cluster", "c1")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = leader.request(ns.DELETE_TOPIC_IN_NAMESRV, {"topic": "TopicD4", "clusterName": "c1"})
        self.assertEqual(r.code, 0, r.remark)
        self.assertEqual(topics(), [])
        c.wait_converged()

    def test_kv_namespaces_like_100_to_102_and_219(self):
        c = self.cluster
        leader = c.leader()
        follower = c.followers(leader)[0]
        self.assertEqual(ctl([follower], "kv", "put", "nsA", "k1", "v1").returncode, 0)
        r = leader.request(ns.PUT_KV_CONFIG, {"namespace": "nsA", "key": "k2", "value": "v2"})
        self.assertEqual(r.code, 0)
        self.assertEqual(ctl([leader], "kv", "put", "nsB", "k1", "other").returncode, 0)
        c.wait_converged()
        for nd in c.all():
            r = nd.request(ns.GET_KV_CONFIG, {"namespace": "nsA", "key": "k1"})
            self.assertEqual((r.code, r.ext.get("value")), (0, "v1"))
            out = ctl([nd], "kv", "get", "nsA", "k2")
            self.assertEqual(out.stdout.strip(), "v2")
        stock = leader.request(ns.GET_KVLIST_BY_NAMESPACE, {"namespace": "nsA"}).body_json()
        ours = self.json_of(ctl([leader], "--json", "kv", "list", "nsA"))
        self.assertEqual(ours, stock)
        self.assertEqual(ours["table"], {"k1": "v1", "k2": "v2"})
        self.assertEqual(ctl([leader], "kv", "delete", "nsA", "k1").returncode, 0)
        r = leader.request(ns.DELETE_KV_CONFIG, {"namespace": "nsA", "key": "k2"})
        self.assertEqual(r.code, 0)
        r = leader.request(ns.GET_KV_CONFIG, {"namespace": "nsA", "key": "k1"})
        out = ctl([leader], "kv", "get", "nsA", "k2")
        self.assertEqual(r.code, ns.QUERY_NOT_FOUND)
        self.assertEqual(out.returncode, 1)
        self.assertIn("QUERY_NOT_FOUND", out.stderr)
        r = leader.request(ns.GET_KV_CONFIG, {"namespace": "nsB", "key": "k1"})
        self.assertEqual((r.code, r.ext.get("value")), (0, "other"))

    def test_brokers_with_heartbeats_per_node(self):
        c = self.cluster
        leader = c.leader()
        f1, f2 = c.followers(leader)
        b = self.broker(name="broker-h", addr="127.0.0.1:45971", topics=["TopicH1", "TopicH2"],
                        timeout_ms=45000)
        self.assertEqual(b.register(f1).code, 0)
        b2 = self.broker(name="broker-i", addr="127.0.0.1:45981", cluster="c2",
                         topics=["TopicI1", "TopicI2"])
        self.assertEqual(b2.register(leader).code, 0)
        c.wait_converged()
        self.assertEqual(b.heartbeat(f1).code, 0)

        def rows_of(doc):
            return {d["brokerName"]: d for d in doc["brokers"]}

        def merged_on_leader():
            doc = self.json_of(ctl([leader], "--json", "brokers"))
            e = {x["node"]: x for x in rows_of(doc)["broker-h"]["lastHeartbeat"]}
            return observed("seenAgoMs" in e[leader.id], e)
        wait_until(merged_on_leader, T(10.0), "the leader merged f1's report of broker-h")
        doc = self.json_of(ctl([leader], "--json", "brokers"))
        rows = rows_of(doc)
        # the same brokers and addresses as the stock 106
        info = leader.request(ns.GET_BROKER_CLUSTER_INFO).body_json()
        stock = sorted((bd["cluster"], bd["brokerName"], int(i), a)
                       for bd in info["brokerAddrTable"].values()
                       for i, a in bd["brokerAddrs"].items())
        self.assertEqual(sorted((d["cluster"], d["brokerName"], d["brokerId"], d["brokerAddr"])
                                for d in doc["brokers"]), stock)
        h = rows["broker-h"]
        self.assertEqual(h["timeoutMs"], 45000)
        self.assertEqual(rows["broker-i"]["timeoutMs"], 120000)
        per_node = {e["node"]: e for e in h["lastHeartbeat"]}
        self.assertEqual(sorted(per_node), [1, 2, 3])
        # heard where it registered and heartbeated (f1), not by the leader itself, which
        # knows of it through f1's report
        self.assertIsNotNone(per_node[f1.id]["agoMs"], per_node)
        self.assertLess(per_node[f1.id]["agoMs"], T(30.0) * 1000)
        self.assertIsNone(per_node[leader.id]["agoMs"], per_node)
        self.assertLess(per_node[leader.id]["seenAgoMs"], T(30.0) * 1000)
        self.assertTrue(per_node[leader.id]["leader"])
        i_nodes = {e["node"]: e.get("agoMs") for e in rows["broker-i"]["lastHeartbeat"]}
        self.assertIsNotNone(i_nodes[leader.id])
        r = ctl([f2], "brokers")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"c1\s+broker-h\s+0\s+127\.0\.0\.1:45971\s+45000 ")
        # a node that does not answer is named, and the exit status says so
        f2.stop()
        r = ctl([leader], "--json", "brokers")
        self.assertEqual(r.returncode, 1)
        doc = json.loads(r.stdout)
        lost = [e for d in doc["brokers"] for e in d["lastHeartbeat"] if e.get("error")]
        self.assertTrue(lost and all(e["node"] == 0 or e["address"].endswith(
            ":%d" % f2.client_port) for e in lost), lost)


if __name__ == "__main__":
    clusterh.main()
