"""Observability: the HTTP port (/status, /metrics, /healthz), the private STATUS code on the
client port, `raftnsctl status`, and divergence detection through CHECKPOINT digests (a node
whose state is corrupted by the RAFTNS_TEST_CORRUPT_AT test hook is marked diverged by the
majority verdict, then recovers; tests/process/test_diverge.py covers the leader case).
One-node cases always run; three-node cases need `raftns --config` and skip without it."""

import json
import os
import re
import subprocess
import sys
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, wait_until  # noqa: E402

NS_CODE_STATUS = 9008
RAFTNSCTL = os.environ.get("RAFTNSCTL_BIN", "raftnsctl")


def http_get(port, path, timeout=None):
    url = "http://127.0.0.1:%d%s" % (port, path)
    try:
        with urllib.request.urlopen(url, timeout=timeout or T(5.0)) as r:
            return r.status, r.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8")


def metric(text, name, labels=None):
    """Value of one sample (0 when absent)."""
    want = name
    if labels:
        want += "{" + ",".join('%s="%s"' % kv for kv in labels.items()) + "}"
    for line in text.splitlines():
        if line.startswith(want + " "):
            return float(line.split()[-1])
    return 0.0


def ctl(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([RAFTNSCTL] + list(args), capture_output=True, timeout=T(60),
                          env=e)


def register(conn, topics=("TopicA",), counter=1, name="broker-a", addr="127.0.0.1:10911"):
    body = ns.register_body(list(topics), ns.data_version(counter))
    ext = ns.register_ext(name, 0, addr, "127.0.0.1:10912", "c1", body)
    r = conn.request(ns.REGISTER_BROKER, ext, body, timeout=T(10.0))
    assert r.code == 0, r
    return r


class OneNode(harness.NodeTestCase):

    def status(self):
        code, body = http_get(self.node.http_port, "/status")
        self.assertEqual(code, 200, body)
        return json.loads(body)

    def metrics(self):
        code, body = http_get(self.node.http_port, "/metrics")
        self.assertEqual(code, 200, body)
        return body

    def test_status_fields(self):
        with self.conn() as c:
            register(c, topics=("TopicA", "TopicB"))
        st = self.status()
        self.assertEqual(st["id"], 1)
        self.assertEqual(st["role"], "leader")
        self.assertGreaterEqual(st["term"], 1)
        self.assertEqual(st["leader"]["id"], 1)
        self.assertEqual(st["leader"]["client"], "127.0.0.1:%d" % self.node.client_port)
        self.assertEqual(st["leader"]["http"], "127.0.0.1:%d" % self.node.http_port)
        self.assertGreaterEqual(st["commit_index"], st["applied_index"])
        self.assertGreaterEqual(st["applied_index"], 2)
        self.assertRegex(st["digest"], r"^[0-9a-f]{16}$")
        self.assertIs(st["ready"], True)
        self.assertIs(st["diverged"], False)
        self.assertEqual(st["brokers"], 1)
        self.assertEqual(st["topics"], 2)
        self.assertEqual([m["id"] for m in st["members"]], [1])
        m = st["members"][0]
        self.assertEqual(m["raft"], "127.0.0.1:%d" % self.node.raft_port)
        self.assertEqual(m["role"], "voter")
        self.assertIs(m["leader"], True)

    def test_status_on_client_port(self):
        with self.conn() as c:
            r = c.request(NS_CODE_STATUS, timeout=T(5.0))
        self.assertEqual(r.code, 0, r)
        st = json.loads(r.body.decode("utf-8"))
        self.assertEqual(st["id"], 1)
        self.assertEqual(st["role"], "leader")

    def test_healthz_and_errors(self):
        self.assertEqual(http_get(self.node.http_port, "/healthz"), (200, "ok\n"))
        self.assertEqual(http_get(self.node.http_port, "/nothing")[0], 404)
        req = urllib.request.Request("http://127.0.0.1:%d/status" % self.node.http_port,
                                     data=b"x", method="POST")
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen(req, timeout=T(5))
        self.assertEqual(cm.exception.code, 405)
        # An oversized request is refused, and the port keeps working.
        import socket
        s = socket.create_connection(("127.0.0.1", self.node.http_port), timeout=T(5))
        s.sendall(b"GET /status HTTP/1.1\r\nX-Big: " + b"a" * 20000)
        data = s.recv(4096)
        s.close()
        self.assertIn(b" 431 ", data.split(b"\r\n")[0])
        self.assertEqual(http_get(self.node.http_port, "/healthz")[0], 200)

    def test_request_counters_move(self):
        before = self.metrics()
        n = 57
        with self.conn() as c:
            replies = c.pipeline([{"code": ns.GET_ROUTEINFO_BY_TOPIC, "ext": {"topic": "Nope"}}
                                  for _ in range(n)], timeout=T(10.0))
        self.assertTrue(all(r.code == 17 for r in replies))
        after = self.metrics()
        lab = {"code": "105"}
        self.assertEqual(metric(after, "raftns_requests_total", lab) -
                         metric(before, "raftns_requests_total", lab), n)
        self.assertEqual(metric(after, "raftns_request_errors_total", lab) -
                         metric(before, "raftns_request_errors_total", lab), n)
        self.assertGreaterEqual(
            metric(after, "raftns_request_duration_seconds_count", lab), n)
        self.assertEqual(metric(after, "raftns_request_duration_seconds_bucket",
                                {"code": "105", "le": "+Inf"}),
                         metric(after, "raftns_requests_total", lab))
        self.assertEqual(metric(after, "raftns_raft_is_leader"), 1)
        self.assertEqual(metric(after, "raftns_diverged"), 0)
        self.assertGreaterEqual(metric(after, "raftns_connections"), 0)
        self.assertIn("raftns_forwarded_writes_total 0", after)
        self.assertIn("raftns_expired_brokers_total", after)

    def test_route_reads_do_no_encoding(self):
        broker = self.conn()
        register(broker, topics=("TopicA", "TopicB"))
        with self.conn() as c:
            r = c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}, timeout=T(5.0))
            self.assertEqual(r.code, 0, r)
            m0 = self.metrics()
            replies = c.pipeline([{"code": ns.GET_ROUTEINFO_BY_TOPIC, "ext": {"topic": "TopicA"}}
                                  for _ in range(1000)], timeout=T(30.0))
        self.assertTrue(all(r.code == 0 for r in replies))
        m1 = self.metrics()
        self.assertEqual(metric(m1, "raftns_route_encodes_total"),
                         metric(m0, "raftns_route_encodes_total"))
        self.assertEqual(metric(m1, "raftns_requests_total", {"code": "105"}) -
                         metric(m0, "raftns_requests_total", {"code": "105"}), 1000)
        # The counter can move: a new topic's first read encodes.
        register(broker, topics=("TopicA", "TopicB", "TopicC"), counter=2)
        with self.conn() as c:
            self.assertEqual(c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicC"},
                                       timeout=T(5.0)).code, 0)
        self.assertGreater(metric(self.metrics(), "raftns_route_encodes_total"),
                           metric(m1, "raftns_route_encodes_total"))

    def test_raftnsctl_status(self):
        addr = "127.0.0.1:%d" % self.node.client_port
        out = ctl("-n", addr, "status")
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.decode().splitlines()
        self.assertEqual(lines[0].split()[:4], ["ID", "ROLE", "TERM", "LEADER"])
        self.assertEqual(len(lines), 2, lines)
        self.assertEqual(lines[1].split()[:2], ["1", "leader"])
        out = ctl("-n", addr, "--json", "status")
        self.assertEqual(out.returncode, 0, out.stderr)
        arr = json.loads(out.stdout)
        self.assertEqual(len(arr), 1)
        self.assertEqual(arr[0]["id"], 1)
        # An unreachable member is a row too, and the exit status says so.
        dead = "127.0.0.1:%d" % harness.free_ports(1)[0]
        out = ctl("-n", addr + "," + dead, "--timeout-ms", "500", "status")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("unreachable", out.stdout.decode())


CHECKPOINT_ARGS = ["--checkpoint-entries", "3", "--checkpoint-ms", "300"]


class ThreeNodes(clusterh.ClusterTestCase):
    """Needs cluster mode (skips when raftns has no --config)."""

    def setUp(self):
        del harness.TEST_NODES[:]
        self.brokers = []
        self.cluster = clusterh.Cluster(3)
        for nd in self.cluster.all():
            nd.extra_args = list(CHECKPOINT_ARGS)
        self.cluster.start()

    def test_status_everywhere(self):
        leader = self.cluster.leader()
        b = self.broker()
        self.assertEqual(b.register(leader).code, 0)
        self.cluster.wait_converged()
        roles = sorted(nd.status()["role"] for nd in self.cluster.all())
        self.assertEqual(roles, ["follower", "follower", "leader"])
        for nd in self.cluster.all():
            st = nd.status()
            self.assertEqual(st["leader"]["id"], leader.id)
            self.assertEqual(len(st["members"]), 3)
            self.assertEqual(st["brokers"], 1)
            self.assertEqual(nd.http_get("/healthz")[0], 200)
        # raftnsctl finds every member from one address.
        out = ctl("-n", "127.0.0.1:%d" % self.cluster[1].client_port, "status")
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = out.stdout.decode().splitlines()[1:]
        self.assertEqual(sorted(r.split()[0] for r in rows), ["1", "2", "3"])

    def test_checkpoints_agree_then_corrupted_node_diverges(self):
        leader = self.cluster.leader()
        b = self.broker()
        for i in range(6):
            b.counter = i + 1
            self.assertEqual(b.register(leader).code, 0)
        wait_until(lambda: all(nd.status()["digest_index"] > 0 for nd in self.cluster.all()),
                   T(15.0), "a checkpoint on every node")
        for nd in self.cluster.all():
            self.assertIs(nd.status()["diverged"], False)
        victim = self.cluster.followers(leader)[0]
        victim.stop()
        os.environ["RAFTNS_TEST_CORRUPT_AT"] = "1"
        try:
            victim.start(wait=False)
        finally:
            del os.environ["RAFTNS_TEST_CORRUPT_AT"]

        def diverged():
            b.counter += 1
            b.register(leader)
            return victim.status()["diverged"]
        wait_until(diverged, T(30.0), "the corrupted node to mark itself diverged", 0.2)
        st = victim.status()
        healthz = victim.http_get("/healthz")[0]
        gauge = metric(victim.http_get("/metrics")[1].decode(), "raftns_diverged")
        # It does not serve its own state: reads go to the leader (docs/readiness.md), writes
        # are refused.
        r = clusterh.route(victim, "TopicA")
        w = victim.request(ns.PUT_KV_CONFIG, {"namespace": "n", "key": "k", "value": "v"})
        self.assertEqual(r.code, 0, r)
        self.assertEqual(r.body, clusterh.route(leader, "TopicA").body)
        # The node recovers on its own a moment later (docs/divergence.md); what it answered
        # while diverged is only checked if it had not recovered by the end of the probes.
        if victim.status()["divergence"]["times_recovered"] == 0:
            self.assertIn("diverged_at", st)
            self.assertEqual(healthz, 503)
            self.assertEqual(gauge, 1)
            self.assertEqual((r.ext or {}).get("raftnsServedBy"), str(leader.id), r)
            self.assertEqual(w.code, 1)
            self.assertIn("diverged", w.remark or "")
        self.assertIn("STATE DIVERGED", victim.log_text())
        for nd in self.cluster.all():
            if nd is not victim:
                self.assertIs(nd.status()["diverged"], False)
                self.assertEqual(clusterh.route(nd, "TopicA").code, 0)
        wait_until(lambda: victim.status()["divergence"]["times_recovered"] >= 1, T(30.0),
                   "the diverged node to recover")
        b.counter += 1
        clusterh.write_until_acked(b, leader)
        self.cluster.wait_converged()
        victim.expect_dead = False


if __name__ == "__main__":
    harness.main()
