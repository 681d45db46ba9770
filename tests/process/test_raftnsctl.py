"""Process tests of the raftnsctl CLI: every command against a real raftns node (human and
--json output, exit codes), address fail-over (dead, silent and "not ready" servers before a
good one), and reply decoding of both header types via a small scripted fake server. It does
not re-test the server's protocol behaviour beyond what the tool shows."""

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T  # noqa: E402

CTL_BIN = os.environ.get("RAFTNSCTL_BIN", "/work/main/build/raftnsctl")


def ctl(*args, timeout=None):
    """Runs raftnsctl; returns (exit code, stdout, stderr)."""
    p = subprocess.run([CTL_BIN] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=timeout or T(30))
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")


def dead_addr():
    """An address with nothing listening (a port just released by the kernel)."""
    return "127.0.0.1:%d" % harness.free_ports(1)[0]


def addr_of(node):
    return "%s:%d" % node.addr


def register(conn, name, broker_id, addr, topics, cluster="c1"):
    """Registers over conn, which must stay open: closing it unregisters the broker."""
    body = ns.register_body(topics)
    ext = ns.register_ext(name=name, broker_id=broker_id, addr=addr,
                          ha=addr.rsplit(":", 1)[0] + ":1", cluster=cluster, body=body)
    r = conn.request(ns.REGISTER_BROKER, ext, body)
    assert r.code == 0, r


class FakeServer:
    """Answers each request frame with reply(header_dict, body) -> bytes or None (silence).
    Records the decoded requests."""

    def __init__(self, reply):
        self.reply = reply
        self.requests = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.conns = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self._conn, args=(c,), daemon=True).start()

    def _conn(self, c):
        buf = b""
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    return
                buf += data
                while len(buf) >= 4:
                    (n,) = struct.unpack(">I", buf[:4])
                    if len(buf) < 4 + n:
                        break
                    req = ns.decode_frame(buf[4:4 + n])
                    buf = buf[4 + n:]
                    self.requests.append(req)
                    out = self.reply(req)
                    if out:
                        c.sendall(out)
        except OSError:
            return

    def close(self):
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


def json_reply(req, code=0, ext=None, remark=None, body=b""):
    h = ns.encode_json_header(code, ext, ns.FLAG_RESPONSE, req.opaque, 479, remark)
    return ns.encode_frame(h, body)


def binary_reply(req, code=0, ext=None, remark=None, body=b""):
    h = ns.encode_binary_header(code, ext, ns.FLAG_RESPONSE, req.opaque, 479, remark)
    return ns.encode_frame(h, body, ns.SER_ROCKETMQ)


class UsageTest(unittest.TestCase):
    """Command-line errors need no server."""

    def test_help(self):
        rc, out, _ = ctl("--help")
        self.assertEqual(rc, 0)
        self.assertIn("usage: raftnsctl", out)
        for cmd in ("route TOPIC", "clusters", "topics", "kv get", "kv put", "kv delete",
                    "kv list", "config get", "config set"):
            self.assertIn(cmd, out)

    def test_usage_errors_exit_2(self):
        cases = [
            [],
            ["frobnicate"],
            ["route"],
            ["route", "a", "b"],
            ["clusters", "extra"],
            ["topics", "--bogus"],
            ["kv"],
            ["kv", "get", "ns-only"],
            ["kv", "put", "ns", "key"],
            ["kv", "list"],
            ["kv", "frob", "a", "b"],
            ["config"],
            ["config", "set"],
            ["config", "set", "novalue"],
            ["config", "set", "=value"],
            ["config", "get", "x"],
            ["--timeout-ms", "abc", "clusters"],
            ["--timeout-ms", "0", "clusters"],
            ["--timeout-ms"],
            ["-n"],
            ["--unknown-flag", "clusters"],
        ]
        for args in cases:
            rc, out, err = ctl("-n", dead_addr(), *args)
            self.assertEqual(rc, 2, "args %r: rc %d out %r err %r" % (args, rc, out, err))
            self.assertIn("usage:", err, args)
            self.assertEqual(out, "", args)

    def test_no_address_answers_exit_3(self):
        a, b = dead_addr(), dead_addr()
        rc, out, err = ctl("-n", a, "-n", b, "clusters")
        self.assertEqual(rc, 3)
        self.assertEqual(out, "")
        self.assertIn(a, err)
        self.assertIn(b, err)
        self.assertIn("no name server answered", err)

    def test_bad_address_is_a_usage_error(self):
        # a typo'd -n is the operator's mistake, not "no name server answered"
        rc, _, err = ctl("-n", "no-port-here", "clusters")
        self.assertEqual(rc, 2)
        self.assertIn("bad -n address (want HOST:PORT): no-port-here", err)


class FakeServerTest(unittest.TestCase):
    """Fail-over rules and reply decoding against scripted servers."""

    def fake(self, reply):
        s = FakeServer(reply)
        self.addCleanup(s.close)
        return s

    def test_binary_header_reply_and_stray_frames(self):
        body = (b'{"brokerAddrTable":{"broker-x":{"brokerAddrs":{0:"10.0.0.1:10911",'
                b'2:"10.0.0.2:10911"},"brokerName":"broker-x","cluster":"cx"}},'
                b'"clusterAddrTable":{"cx":["broker-x"]}}')

        def reply(req):
            # A server-side request and a reply to another opaque first: both must be skipped.
            stray = ns.encode_frame(ns.encode_json_header(905, {}, 0, 77777), b"")
            other = binary_reply(req, code=1, remark="wrong opaque")
            other = other[:13] + struct.pack(">i", req.opaque + 1000) + other[17:]
            return stray + other + binary_reply(req, body=body)

        s = self.fake(reply)
        rc, out, err = ctl("-n", s.addr, "clusters")
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[0].split(), ["CLUSTER", "BROKER", "ID", "ADDRESS"])
        self.assertEqual([l.split() for l in lines[1:]],
                         [["cx", "broker-x", "0", "10.0.0.1:10911"],
                          ["cx", "broker-x", "2", "10.0.0.2:10911"]])
        rc, out, err = ctl("-n", s.addr, "--json", "clusters")
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)  # bare integer keys came in; standard JSON goes out
        self.assertEqual(doc["brokerAddrTable"]["broker-x"]["brokerAddrs"],
                         {"0": "10.0.0.1:10911", "2": "10.0.0.2:10911"})
        req = s.requests[0]
        self.assertEqual(req.code, 106)
        self.assertEqual(req.version, 479)
        self.assertEqual(req.flag, 0)

    def test_binary_ext_reply(self):
        s = self.fake(lambda req: binary_reply(req, ext={"value": "v 1"}))
        rc, out, err = ctl("-n", s.addr, "kv", "get", "ns1", "k1")
        self.assertEqual((rc, out), (0, "v 1\n"), err)
        rc, out, err = ctl("-n", s.addr, "--json", "kv", "get", "ns1", "k1")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out), {"code": 0, "value": "v 1"})
        self.assertEqual(s.requests[0].code, 101)
        self.assertEqual(s.requests[0].ext, {"namespace": "ns1", "key": "k1"})

    def test_not_ready_and_silent_servers_are_skipped(self):
        not_ready = self.fake(lambda req: json_reply(req, 1, remark="name server not ready"))
        silent = self.fake(lambda req: None)
        good = self.fake(lambda req: json_reply(req, body=b'{"topicList":["b","a"]}'))
        rc, out, err = ctl("--timeout-ms", int(T(0.5) * 1000), "-n", not_ready.addr,
                           "-n", silent.addr,
                           "-n", good.addr, "topics")
        self.assertEqual((rc, out), (0, "a\nb\n"), err)
        self.assertIn("not ready", err)
        self.assertIn(silent.addr, err)
        self.assertEqual(len(not_ready.requests), 1)
        self.assertEqual(len(silent.requests), 1)
        self.assertEqual(good.requests[0].code, 206)
        # Only not-ready servers: nobody answered.
        rc, out, err = ctl("-n", not_ready.addr, "topics")
        self.assertEqual((rc, out), (3, ""))
        self.assertIn("no name server answered", err)

    def test_other_errors_are_answers(self):
        busy = self.fake(lambda req: json_reply(req, 1, remark="disable"))
        good = self.fake(lambda req: json_reply(req, body=b'{"topicList":[]}'))
        rc, out, err = ctl("-n", busy.addr, "-n", good.addr, "topics", "--cluster", "c1")
        self.assertEqual((rc, out), (1, ""))
        self.assertIn("error 1 (SYSTEM_ERROR): disable", err)
        self.assertEqual(len(good.requests), 0)
        self.assertEqual(busy.requests[0].code, 224)
        self.assertEqual(busy.requests[0].ext, {"cluster": "c1"})

    def test_config_set_body_escaping(self):
        s = self.fake(lambda req: json_reply(req))
        rc, out, err = ctl("-n", s.addr, "config", "set", "a=1", "b=x=y", "c= lead\\back")
        self.assertEqual((rc, out), (0, "ok\n"), err)
        self.assertEqual(s.requests[0].code, 318)
        self.assertEqual(s.requests[0].body, b"a=1\nb=x=y\nc=\\ lead\\\\back\n")


class NodeCtlTest(harness.NodeTestCase):
    """Every command against a real node."""

    def run_ok(self, *args):
        rc, out, err = ctl("-n", addr_of(self.node), *args)
        self.assertEqual(rc, 0, "raftnsctl %r: rc %d, stderr %r" % (args, rc, err))
        return out

    def run_fail(self, *args):
        rc, out, err = ctl("-n", addr_of(self.node), *args)
        self.assertEqual(rc, 1, "raftnsctl %r: rc %d, out %r, err %r" % (args, rc, out, err))
        self.assertEqual(out, "")
        return err

    def populate(self):
        register(self.conn(), "broker-a", 0, "127.0.0.1:10911", ["TopicA", "TopicB"])
        register(self.conn(), "broker-a", 1, "127.0.0.1:10921", ["TopicA", "TopicB"])
        register(self.conn(), "broker-b", 0, "127.0.0.1:20911", ["TopicA", "TopicC"],
                 cluster="c2")

    def test_clusters(self):
        out = self.run_ok("clusters")
        self.assertEqual([l.split() for l in out.splitlines()],
                         [["CLUSTER", "BROKER", "ID", "ADDRESS"]])
        self.assertEqual(json.loads(self.run_ok("--json", "clusters")),
                         {"brokerAddrTable": {}, "clusterAddrTable": {}})
        self.populate()
        out = self.run_ok("clusters")
        self.assertEqual([l.split() for l in out.splitlines()[1:]],
                         [["c1", "broker-a", "0", "127.0.0.1:10911"],
                          ["c1", "broker-a", "1", "127.0.0.1:10921"],
                          ["c2", "broker-b", "0", "127.0.0.1:20911"]])
        doc = json.loads(self.run_ok("--json", "clusters"))
        self.assertEqual(doc["brokerAddrTable"]["broker-a"]["brokerAddrs"],
                         {"0": "127.0.0.1:10911", "1": "127.0.0.1:10921"})
        self.assertEqual(doc["clusterAddrTable"], {"c1": ["broker-a"], "c2": ["broker-b"]})

    def test_route(self):
        err = self.run_fail("route", "TopicA")
        self.assertIn("error 17 (TOPIC_NOT_EXIST)", err)
        self.assertIn("No topic route info in name server for the topic: TopicA", err)
        self.populate()
        out = self.run_ok("route", "TopicA")
        lines = out.splitlines()
        self.assertEqual(lines[0], "topic TopicA")
        self.assertEqual(lines[1].split(), ["CLUSTER", "BROKER", "ID", "ADDRESS"])
        self.assertEqual([l.split() for l in lines[2:5]],
                         [["c1", "broker-a", "0", "127.0.0.1:10911"],
                          ["c1", "broker-a", "1", "127.0.0.1:10921"],
                          ["c2", "broker-b", "0", "127.0.0.1:20911"]])
        self.assertEqual(lines[5], "")
        self.assertEqual(lines[6].split(), ["BROKER", "READ", "WRITE", "PERM", "SYSFLAG"])
        self.assertEqual([l.split() for l in lines[7:]],
                         [["broker-a", "4", "4", "6", "0"], ["broker-b", "4", "4", "6", "0"]])
        doc = json.loads(self.run_ok("route", "TopicC", "--json"))
        self.assertEqual(len(doc["brokerDatas"]), 1)
        self.assertEqual(doc["brokerDatas"][0]["brokerAddrs"], {"0": "127.0.0.1:20911"})
        self.assertEqual(doc["brokerDatas"][0]["cluster"], "c2")
        self.assertEqual(doc["queueDatas"],
                         [{"brokerName": "broker-b", "perm": 6, "readQueueNums": 4,
                           "topicSysFlag": 0, "writeQueueNums": 4}])
        self.assertIn("filterServerTable", doc)

    def test_topics(self):
        self.assertEqual(self.run_ok("topics"), "")
        self.assertEqual(json.loads(self.run_ok("--json", "topics")), {"topicList": []})
        self.populate()
        self.assertEqual(self.run_ok("topics").splitlines(), ["TopicA", "TopicB", "TopicC"])
        self.assertEqual(self.run_ok("topics", "--cluster", "c2").splitlines(),
                         ["TopicA", "TopicC"])
        self.assertEqual(self.run_ok("topics", "--cluster=c1").splitlines(),
                         ["TopicA", "TopicB"])
        self.assertEqual(self.run_ok("topics", "--cluster", "nope"), "")
        doc = json.loads(self.run_ok("--json", "topics", "--cluster", "c2"))
        self.assertEqual(sorted(doc["topicList"]), ["TopicA", "TopicC"])

    def test_kv(self):
        err = self.run_fail("kv", "get", "ns1", "k1")
        self.assertIn("error 22 (QUERY_NOT_FOUND): No config item, Namespace: ns1 Key: k1", err)
        err = self.run_fail("kv", "list", "ns1")
        self.assertIn("error 22 (QUERY_NOT_FOUND): No config item, Namespace: ns1", err)
        self.assertEqual(self.run_ok("kv", "put", "ns1", "k1", "value one"), "ok\n")
        self.assertEqual(json.loads(self.run_ok("--json", "kv", "put", "ns1", "k2", "v2")),
                         {"code": 0})
        self.assertEqual(self.run_ok("kv", "get", "ns1", "k1"), "value one\n")
        self.assertEqual(json.loads(self.run_ok("--json", "kv", "get", "ns1", "k2")),
                         {"code": 0, "value": "v2"})
        out = self.run_ok("kv", "list", "ns1")
        self.assertEqual(out.splitlines()[0].split(), ["KEY", "VALUE"])
        self.assertEqual([l.split(None, 1) for l in out.splitlines()[1:]],
                         [["k1", "value one"], ["k2", "v2"]])
        self.assertEqual(json.loads(self.run_ok("--json", "kv", "list", "ns1")),
                         {"table": {"k1": "value one", "k2": "v2"}})
        self.assertEqual(self.run_ok("kv", "delete", "ns1", "k1"), "ok\n")
        self.run_fail("kv", "get", "ns1", "k1")
        self.assertEqual(self.run_ok("kv", "delete", "ns1", "never-there"), "ok\n")
        self.assertEqual(json.loads(self.run_ok("--json", "kv", "delete", "ns1", "k2")),
                         {"code": 0})
        self.assertEqual(json.loads(self.run_ok("--json", "kv", "list", "ns1")), {"table": {}})

    def test_config(self):
        out = self.run_ok("config", "get")
        props = ns.parse_properties(out.encode())
        self.assertEqual(props.get("enableTopicList"), "true")
        doc = json.loads(self.run_ok("--json", "config", "get"))
        self.assertEqual(doc, props)
        self.assertEqual(self.run_ok("config", "set", "enableTopicList=false",
                                     "enableAllTopicList=false"), "ok\n")
        doc = json.loads(self.run_ok("--json", "config", "get"))
        self.assertEqual(doc["enableTopicList"], "false")
        self.assertEqual(doc["enableAllTopicList"], "false")
        self.assertIn("error 1 (SYSTEM_ERROR): disable", self.run_fail("topics"))
        self.assertIn("disable", self.run_fail("topics", "--cluster", "c1"))
        err = self.run_fail("config", "set", "kvConfigPath=/tmp/evil", "enableTopicList=true")
        self.assertIn("error 16 (NO_PERMISSION)", err)
        self.assertEqual(json.loads(self.run_ok("--json", "config", "set",
                                                "enableTopicList=true")), {"code": 0})
        self.assertEqual(json.loads(self.run_ok("--json", "config", "get"))["enableTopicList"],
                         "true")

    def test_failover_to_live_node(self):
        self.populate()
        good = addr_of(self.node)
        d1, d2 = dead_addr(), dead_addr()
        for args in (["-n", d1, "-n", d2, "-n", good],
                     ["-n", "%s,%s" % (d1, good)],
                     ["-n", "%s;%s" % (d1, good)],
                     ["--namesrv=%s;%s" % (d1, good)]):
            rc, out, err = ctl(*(args + ["topics"]))
            self.assertEqual((rc, out), (0, "TopicA\nTopicB\nTopicC\n"), (args, err))
            self.assertIn(d1, err)
            self.assertIn("connection refused", err)
        # The first live address answers; later ones are not needed.
        rc, out, err = ctl("-n", good, "-n", d1, "--json", "kv", "put", "n", "k", "v")
        self.assertEqual((rc, err), (0, ""))
        # A server error from a live node is final even when more addresses follow.
        rc, out, err = ctl("-n", d1, "-n", good, "-n", good, "route", "Nope")
        self.assertEqual(rc, 1)
        self.assertIn("error 17", err)


if __name__ == "__main__":
    harness.main()
