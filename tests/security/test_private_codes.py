"""Attacks on raftns's private node-to-node codes (9001-9007, 9012-9013, include/raftns/codes.h) and the
cluster secret policy. Every private request must carry an HMAC-SHA256 signature by the
cluster secret (include/raftns/sign.h), computed here independently (nsclient.sign_private).
After every attack the cluster must be unchanged: same leader, term, commit index and state
on every node, no node diverged, and the refusal counted in /metrics."""

import json
import os
import stat
import struct
import subprocess
import sys
import tempfile
import time

import clusterh
import harness
import nsclient as ns
from harness import T

SECRET = "raftns-test-secret"
NO_PERMISSION = 16
FORWARD, READ_INDEX, MEMBER_LIST, MEMBER_ADD, MEMBER_REMOVE, LEADER_TRANSFER = range(9001, 9007)
LIVENESS_REPORT = 9007
DIGEST_REPORT, STATE_FETCH = 9012, 9013
CMD_VERDICT = 16

# raft/command.c: u8 version, u8 type, i64 leader_time_ms (big-endian), then the payload.
CMD_KV_PUT, CMD_EXPIRE_BROKERS, CMD_CHECKPOINT, CMD_SET_MEMBER = 4, 3, 11, 12


def put_str(s):
    b = s.encode()
    return struct.pack(">I", len(b)) + b


def command(ctype, payload):
    return struct.pack(">BBq", 1, ctype, int(time.time() * 1000)) + payload


def kv_put_command(key, value):
    return command(CMD_KV_PUT, put_str("attack") + put_str(key) + put_str(value))


def checkpoint_command():
    return command(CMD_CHECKPOINT, struct.pack(">QQ", 1, 0xdeadbeef))


def metric(nd, name):
    code, body = nd.http_get("/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    return 0


class PrivateCodes(harness.NodeTestCase):
    maxDiff = None
    @classmethod
    def setUpClass(cls):
        cls.c = clusterh.Cluster(3, secret=SECRET)
        cls.c.start()

    @classmethod
    def tearDownClass(cls):
        cls.c.cleanup()

    def setUp(self):
        super().setUp()
        harness.TEST_NODES.extend(self.c.all())

    def snapshot(self):
        """What no attack may change: per node term, leader, commit/applied index, digest and
        the KV namespace the attacks aim at."""
        out = {}
        for nd in self.c.all():
            st = nd.status()
            r = nd.request(ns.GET_KVLIST_BY_NAMESPACE, {"namespace": "attack"})
            out[nd.id] = (st["term"], clusterh.leader_id_of(st), st["commit_index"],
                          st["applied_index"], st["digest"], st["diverged"], r.code, r.body)
        return out

    def assert_unchanged(self, before):
        self.c.wait_converged()
        after = self.snapshot()
        self.assertEqual(before, after)
        for nd in self.c.all():
            self.assertTrue(nd.alive(), "node %d died" % nd.id)
            self.assertFalse(nd.status()["diverged"])

    def refused(self, nd, code, ext, body=b""):
        r = nd.request(code, ext, body)
        self.assertEqual(r.code, NO_PERMISSION, "code %d with %r was not refused: %r" % (
            code, ext, r.remark))
        return r.remark or ""

    def test_unsigned_and_clear_text_secret_are_refused(self):
        leader = self.c.leader()
        before = self.snapshot()
        counted = metric(leader, "raftns_private_refused_total")
        body = kv_put_command("k-clear", "forged")
        codes = (FORWARD, READ_INDEX, MEMBER_LIST, MEMBER_ADD, MEMBER_REMOVE,
                 LEADER_TRANSFER, LIVENESS_REPORT, DIGEST_REPORT, STATE_FETCH)
        for code in codes:
            # the old scheme: the secret itself in an ext field
            remark = self.refused(leader, code, {"raftnsSecret": SECRET, "raftnsFrom": "2",
                                                 "raftnsId": "3"}, body)
            self.assertIn("no signature", remark)
            self.refused(leader, code, {}, body)
        self.assertGreaterEqual(metric(leader, "raftns_private_refused_total"),
                                counted + 2 * len(codes))
        self.assert_unchanged(before)

    def test_wrong_tampered_expired_and_replayed_signatures(self):
        leader = self.c.leader()
        follower = self.c.followers(leader)[0]
        before = self.snapshot()
        body = kv_put_command("k-sig", "forged")
        ext = {"raftnsFrom": "2"}
        # wrong secret
        self.assertIn("mismatch", self.refused(leader, FORWARD,
                                                ns.sign_private(FORWARD, ext, body,
                                                                "not-the-secret-123"), body))
        # signed, then the body altered
        signed = ns.sign_private(FORWARD, ext, body, SECRET)
        self.assertIn("mismatch", self.refused(leader, FORWARD, signed,
                                                kv_put_command("k-sig", "other")))
        # signed, then an ext field altered
        tampered = dict(signed, raftnsFrom="3")
        self.refused(leader, FORWARD, tampered, body)
        # signed for another code
        self.refused(leader, MEMBER_REMOVE, dict(ns.sign_private(FORWARD, {"raftnsId": "3"},
                                                                  b"", SECRET)))
        # two minutes old, and two minutes ahead
        for skew in (-120000, 120000):
            old = ns.sign_private(FORWARD, ext, body, SECRET,
                                  ts_ms=int(time.time() * 1000) + skew)
            self.assertIn("window", self.refused(leader, FORWARD, old, body))
        self.assert_unchanged(before)

        # a replay: the first READ_INDEX is answered, the same bytes again are refused
        ri = ns.sign_private(READ_INDEX, {"raftnsFrom": str(follower.id)}, b"", SECRET)
        self.assertEqual(leader.request(READ_INDEX, ri).code, 0)
        self.assertIn("replayed", self.refused(leader, READ_INDEX, ri))

    def test_forward_carries_only_client_command_types(self):
        leader = self.c.leader()
        before = self.snapshot()
        members = json.loads(leader.request(MEMBER_LIST, ns.sign_private(
            MEMBER_LIST, {}, b"", SECRET)).body)
        self.assertEqual(len(members["members"]), 3)
        forged = [
            checkpoint_command(),
            # a forged verdict would mark healthy nodes diverged
            command(CMD_VERDICT, struct.pack(">QQI", 1, 0xBAD, 0) + struct.pack(">I", 0)),
            command(CMD_SET_MEMBER, struct.pack(">Q", 2) + put_str("127.0.0.1:1") +
                    put_str("127.0.0.1:2") + put_str("127.0.0.1:3")),
            command(CMD_EXPIRE_BROKERS, struct.pack(">I", 0)),
        ]
        for body in forged:
            ext = ns.sign_private(FORWARD, {"raftnsFrom": "2"}, body, SECRET)
            remark = self.refused(leader, FORWARD, ext, body)
            self.assertIn("cannot be forwarded", remark)
        self.assert_unchanged(before)

    def test_correctly_signed_forward_is_applied_everywhere(self):
        """The positive case, so the refusals above are not a node refusing everything."""
        leader = self.c.leader()
        body = kv_put_command("k-ok", "signed")
        ext = ns.sign_private(FORWARD, {"raftnsFrom": "2"}, body, SECRET)
        r = leader.request(FORWARD, ext, body)
        self.assertEqual(r.code, 0, r.remark)
        self.c.wait_converged()
        for nd in self.c.all():
            got = nd.request(ns.GET_KV_CONFIG, {"namespace": "attack", "key": "k-ok"})
            self.assertEqual((got.code, got.ext.get("value")), (0, "signed"))
        # clean up so the other tests see the namespace they started with
        dk = command(5, put_str("attack") + put_str("k-ok"))
        r = leader.request(FORWARD, ns.sign_private(FORWARD, {"raftnsFrom": "2"}, dk, SECRET),
                           dk)
        self.assertEqual(r.code, 0, r.remark)


class SecretPolicy(harness.NodeTestCase):
    def run_with(self, config):
        d = tempfile.mkdtemp(prefix="raftns-secret-")
        self.addCleanup(subprocess.run, ["rm", "-rf", d])
        path = os.path.join(d, "cluster.json")
        with open(path, "w") as f:
            json.dump(config, f)
        return path, d

    def config(self, n, **top):
        ports = harness.free_ports(3 * n)
        nodes = [{"id": i + 1, "raft": "127.0.0.1:%d" % ports[3 * i],
                  "client": "127.0.0.1:%d" % ports[3 * i + 1],
                  "http": "127.0.0.1:%d" % ports[3 * i + 2], "bootstrap": True}
                 for i in range(n)]
        cfg = {"nodes": nodes}
        cfg.update(top)
        return cfg

    def start_refused(self, cfg, want, extra=()):
        path, d = self.run_with(cfg)
        p = subprocess.run([harness.RAFTNS_BIN, "--config", path, "--id", "1", "--data-dir",
                            os.path.join(d, "data")] + list(extra),
                           capture_output=True, text=True, timeout=T(30))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(want, p.stderr)

    def test_weak_secrets_are_refused(self):
        self.start_refused(self.config(3, secret="change-me-local-secret"), "placeholder")
        self.start_refused(self.config(3, secret="REPLACE-with-a-long-random-string"),
                           "placeholder")
        self.start_refused(self.config(3, secret="short"), "at least 16")
        self.start_refused(self.config(1, secret="short"), "at least 16")
        self.start_refused(self.config(3), "needs a shared secret")
        self.start_refused(self.config(3, secretFile="missing.secret"), "cannot open")
        self.start_refused(self.config(3, secret="a" * 20, secretFile="x"), "not both")

    def test_insecure_dev_allows_a_weak_secret(self):
        path, d = self.run_with(self.config(1, secret="short"))
        nd = harness.Node(extra_args=["--config", path, "--insecure-dev"])
        harness.ALL_NODES.append(nd)
        harness.TEST_NODES.append(nd)
        self.addCleanup(nd.cleanup)
        nd.client_port = int(json.load(open(path))["nodes"][0]["client"].split(":")[1])
        nd.start()
        self.assertIn("--insecure-dev", nd.log_text())

    def test_secret_file_relative_to_the_cluster_file(self):
        cfg = self.config(1, secretFile="s/cluster.secret")
        path, d = self.run_with(cfg)
        os.mkdir(os.path.join(d, "s"))
        sf = os.path.join(d, "s", "cluster.secret")
        with open(sf, "w") as f:
            f.write("0123456789abcdef0123456789abcdef\n")
        os.chmod(sf, 0o600)
        nd = harness.Node(extra_args=["--config", path])
        harness.ALL_NODES.append(nd)
        harness.TEST_NODES.append(nd)
        self.addCleanup(nd.cleanup)
        nd.client_port = int(cfg["nodes"][0]["client"].split(":")[1])
        nd.start()
        # the key it uses is the file's: a request signed with it is answered
        with ns.Conn(nd.addr) as c:
            ok = c.request(MEMBER_LIST, ns.sign_private(
                MEMBER_LIST, {}, b"", "0123456789abcdef0123456789abcdef"))
            bad = c.request(MEMBER_LIST, ns.sign_private(MEMBER_LIST, {}, b"", SECRET))
        self.assertEqual((ok.code, bad.code), (0, NO_PERMISSION))

    def test_default_node_generates_and_keeps_its_secret(self):
        nd = self.new_node()
        path = os.path.join(nd.data_dir, "cluster-secret")
        mode = stat.S_IMODE(os.stat(path).st_mode)
        self.assertEqual(mode, 0o600)
        with open(path) as f:
            first = f.read().strip()
        self.assertEqual(len(first), 64)
        int(first, 16)
        # the generated secret is the key: signed with it works, with anything else not
        with ns.Conn(nd.addr) as c:
            self.assertEqual(c.request(MEMBER_LIST, ns.sign_private(
                MEMBER_LIST, {}, b"", first)).code, 0)
            self.assertEqual(c.request(MEMBER_LIST, ns.sign_private(
                MEMBER_LIST, {}, b"", "")).code, NO_PERMISSION)
        nd.restart()
        with open(path) as f:
            self.assertEqual(f.read().strip(), first)


if __name__ == "__main__":
    harness.main()
