"""Security tests of the RocketMQ ACL on the client port (aclEnable): against ACL-enabled 1-node
and 3-node clusters, every mutating code is refused unsigned, with a wrong secret, with a tampered
ext field or body, with an account whose role is too low and from a disallowed network, and
accepted when correctly signed (also through a follower, which forwards); anonymous reads follow
aclAnonymousRead; aclBrokerNetworks admits unsigned brokers by source address; 318 cannot change
the ACL settings; refusals are counted in /metrics; raftnsctl acl add/list/remove round-trips;
accounts survive snapshots and restarts identically on every node.

Signatures are computed here with Python's hmac/base64, independently of the C code: content =
the values of every ext field but Signature, sorted by key in UTF-16 code unit order, then the
body; Signature = base64(HMAC-SHA1(secretKey, content)).
Run: RAFTNS_BIN=build/raftns RAFTNSCTL_BIN=build/raftnsctl PYTHONPATH=tests/process \
     python3 tests/security/test_acl.py"""

import base64
import hashlib
import hmac
import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "process"))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, wait_until  # noqa: E402

RAFTNSCTL = os.environ.get("RAFTNSCTL_BIN", "/work/main/build/raftnsctl")
NO_PERMISSION = 16
SECRET = "acl-test-cluster-secret"
ACL_UPDATE, ACL_LIST, MEMBER_LIST = 9009, 9010, 9003

ACCOUNTS = [
    {"accessKey": "root", "secretKey": "root-secret-123", "role": "admin"},
    {"accessKey": "brk", "secretKey": "broker-secret-456", "role": "broker"},
    {"accessKey": "ro", "secretKey": "reader-secret-789", "role": "reader"},
    # an admin that may sign only from 10.0.0.0/8: refused from 127.0.0.1
    {"accessKey": "far", "secretKey": "far-secret-000", "role": "admin",
     "networks": ["10.0.0.0/8"]},
]
SK = {a["accessKey"]: a["secretKey"] for a in ACCOUNTS}
SK["late"] = "late-secret-1"  # added with raftnsctl by the 3-node test


def signature(ext, body, secret_key):
    keys = sorted((k for k in ext if k != "Signature"), key=lambda k: k.encode("utf-16-be"))
    content = "".join(ext[k] for k in keys).encode("utf-8") + body
    return base64.b64encode(hmac.new(secret_key.encode(), content, hashlib.sha1).digest()).decode()


def signed(ext, body, access_key, secret_key=None):
    out = dict(ext)
    out["AccessKey"] = access_key
    out["Signature"] = signature(out, body, secret_key or SK[access_key])
    return out


def private(code, ext=None, body=b"", access_key=None, secret_key=None, cluster=SECRET):
    """A private request as raftnsctl sends it: AccessKey, then the cluster signature
    (nsclient.sign_private, fresh nonce), then the ACL Signature over all of it."""
    out = dict(ext or {})
    if access_key is not None:
        out["AccessKey"] = access_key
    out = ns.sign_private(code, out, body, cluster)
    if access_key is not None:
        out["Signature"] = signature(out, body, secret_key or SK[access_key])
    return out


def register_request(name="broker-a", addr="127.0.0.1:10911", topics=("TopicA", "TopicB")):
    body = ns.register_body(list(topics), ns.data_version(1))
    ha = addr.rsplit(":", 1)[0] + ":%d" % (int(addr.rsplit(":", 1)[1]) + 1)
    return ns.REGISTER_BROKER, ns.register_ext(name, 0, addr, ha, "c1", body), body


def broker_ref(name="broker-a", addr="127.0.0.1:10911"):
    return {"brokerName": name, "brokerAddr": addr, "clusterName": "c1", "brokerId": "0"}


def mutations():
    """(label, code, ext, body, role needed) for every mutating code, in an order in which each
    accepted request makes sense (the register comes before what needs the broker)."""
    reg = register_request()
    route_body = json.dumps({"queueDatas": [{"brokerName": "broker-a", "readQueueNums": 4,
                                             "writeQueueNums": 4, "perm": 6,
                                             "topicSysFlag": 0}]}).encode()
    return [
        ("103 register", reg[0], reg[1], reg[2], "broker"),
        ("322 query data version", ns.QUERY_DATA_VERSION, broker_ref(),
         ns.dumps_java(ns.data_version(1)).encode(), "broker"),
        ("904 heartbeat", ns.BROKER_HEARTBEAT, broker_ref(), b"", "broker"),
        ("217 register topic", ns.REGISTER_TOPIC_IN_NAMESRV, {"topic": "TopicR"}, route_body,
         "broker"),
        ("100 put kv", ns.PUT_KV_CONFIG, {"namespace": "n", "key": "k", "value": "v"}, b"",
         "admin"),
        ("102 delete kv", ns.DELETE_KV_CONFIG, {"namespace": "n", "key": "k"}, b"", "admin"),
        ("205 wipe write perm", ns.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}, b"",
         "admin"),
        ("327 add write perm", ns.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}, b"",
         "admin"),
        ("318 update config", ns.UPDATE_NAMESRV_CONFIG, {}, b"orderMessageEnable=true\n",
         "admin"),
        ("216 delete topic", ns.DELETE_TOPIC_IN_NAMESRV, {"topic": "TopicR"}, b"", "admin"),
        ("104 unregister", ns.UNREGISTER_BROKER, broker_ref(), b"", "broker"),
    ]


LOWER = {"broker": "ro", "admin": "brk"}   # an account one role too low
RIGHT = {"broker": "brk", "admin": "root"}


def ctl(nd, *args, creds=None, env_creds=None):
    a = [RAFTNSCTL, "-n", "%s:%d" % nd.addr, "--secret", SECRET,
         "--timeout-ms", str(int(T(15.0) * 1000))]
    if creds:
        a += ["--access-key", creds, "--secret-key", SK[creds]]
    env = dict(os.environ)
    env.pop("RAFTNS_ACCESS_KEY", None)
    env.pop("RAFTNS_SECRET_KEY", None)
    if env_creds:
        env["RAFTNS_ACCESS_KEY"], env["RAFTNS_SECRET_KEY"] = env_creds
    p = subprocess.run(a + [str(x) for x in args], capture_output=True, timeout=T(60), env=env,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def refusals(nd):
    """{reason: count} of raftns_acl_refusals_total in /metrics."""
    code, body = nd.http_get("/metrics")
    assert code == 200, code
    text = body.decode()
    assert "# HELP raftns_acl_refusals_total" in text
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r'^raftns_acl_refusals_total\{reason="([a-z_]+)"\} (\d+)$', text, re.M)}


def signed_ready(nd):
    """Readiness from /status (the harness's probe, an unsigned 106, fails with anonymous reads
    off)."""
    try:
        return nd.status(timeout=T(1.0)).get("ready") is True
    except OSError:
        return False


def make_cluster(n, namesrv=None, accounts=ACCOUNTS, snapshot_threshold=4096):
    sets = {"aclEnable": "true"}
    sets.update(namesrv or {})
    cl = clusterh.Cluster(n=n, namesrv=sets, secret=SECRET, snapshot_threshold=snapshot_threshold)
    for nd in cl.all():
        nd.is_ready = lambda nd=nd: signed_ready(nd)
    if accounts is not None:
        cl.config["acl"] = {"accounts": accounts}
        with open(cl.config_path, "w") as f:
            json.dump(cl.config, f, indent=2)
    return cl


def acl_list(nd, creds="root"):
    """ACL_LIST as JSON; creds=None sends it unsigned (allowed while the table is empty)."""
    rc, out, err = ctl(nd, "--json", "acl", "list", creds=creds)
    assert rc == 0, (rc, out, err)
    return json.loads(out)


class ClusterCase(unittest.TestCase):
    def tearDown(self):
        for cl in getattr(self, "clusters", []):
            cl.cleanup()

    def cluster(self, *a, **kw):
        del harness.TEST_NODES[:]
        cl = make_cluster(*a, **kw)
        self.clusters = getattr(self, "clusters", []) + [cl]
        cl.start()
        def seeded():
            if kw.get("accounts", ACCOUNTS) is None:
                return True
            n = len(acl_list(cl.leader())["accounts"])
            return harness.observed(n == len(ACCOUNTS), "%d accounts" % n)
        wait_until(seeded, T(20.0), "the file's %d accounts seeded" % len(ACCOUNTS))
        return cl

    def assert_refused(self, r, remark, what):
        self.assertEqual(r.code, NO_PERMISSION, "%s: %r" % (what, r))
        self.assertEqual(r.remark, remark, what)

    def assert_accepted(self, r, what):
        self.assertNotEqual(r.code, NO_PERMISSION, "%s: %r" % (what, r))
        self.assertEqual(r.code, 0, "%s: %r" % (what, r))


class TestSingleNode(ClusterCase):
    """One node, anonymous reads on, no broker networks, accounts seeded from the file."""

    def test_every_mutation_refused_then_accepted(self):
        cl = self.cluster(1)
        nd = cl[1]
        before = refusals(nd)
        for what, code, ext, body, need in mutations():
            with nd.conn() as c:
                rq = lambda e, b=body: c.request(code, e, b, timeout=T(10.0))  # noqa: E731
                self.assert_refused(rq(ext), "no AccessKey", what + " unsigned")
                self.assert_refused(rq(signed(ext, body, RIGHT[need], "wrong-secret")),
                                    "signature mismatch", what + " wrong secret")
                good = signed(ext, body, RIGHT[need])
                tampered = dict(good)
                tampered["raftnsExtra"] = "1"  # an added field is signed content too
                self.assert_refused(rq(tampered), "signature mismatch", what + " added field")
                keys = sorted(ext)
                if keys:
                    k = keys[0]
                    tampered = dict(good)
                    tampered[k] = ext[k] + "x"
                    self.assert_refused(rq(tampered), "signature mismatch",
                                        what + " tampered field")
                if body:
                    self.assert_refused(rq(good, body + b" "), "signature mismatch",
                                        what + " tampered body")
                self.assert_refused(rq(signed(ext, body, LOWER[need])),
                                    "role %s required" % need, what + " role too low")
                self.assert_refused(rq(signed(ext, body, "far")), "source address not allowed",
                                    what + " from a disallowed network")
                self.assert_refused(rq(signed(ext, body, "ghost", "x")), "unknown AccessKey",
                                    what + " unknown account")
                self.assert_accepted(rq(good), what + " signed")
                if need == "broker":  # admin may do everything
                    self.assert_accepted(rq(signed(ext, body, "root")), what + " as admin")
        after = refusals(nd)
        for reason in ("no_access_key", "signature_mismatch", "role", "source_address",
                       "unknown_access_key"):
            self.assertGreater(after.get(reason, 0), before.get(reason, 0), reason)
        self.assertIn("refused: no AccessKey", nd.log_text())
        self.assertNotIn("root-secret-123", nd.log_text())

    def test_reads_318_and_raftnsctl(self):
        cl = self.cluster(1)
        nd = cl[1]
        with nd.conn() as c:
            # anonymous reads work; wrong credentials on a read are still refused
            self.assertEqual(c.request(ns.GET_BROKER_CLUSTER_INFO).code, 0)
            self.assertEqual(c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "none"}).code, 17)
            ext = {"topic": "none"}
            self.assert_refused(c.request(ns.GET_ROUTEINFO_BY_TOPIC,
                                          signed(ext, b"", "ro", "bad")),
                                "signature mismatch", "read with a wrong secret")
            self.assertEqual(c.request(ns.GET_ROUTEINFO_BY_TOPIC, signed(ext, b"", "ro")).code,
                             17)
            # 318 never changes the ACL settings, not even for an admin
            for body in (b"aclEnable=false\n", b"aclAnonymousRead=false\n",
                         b"aclBrokerNetworks=0.0.0.0/0\n"):
                r = c.request(ns.UPDATE_NAMESRV_CONFIG, signed({}, body, "root"), body)
                self.assertEqual(r.code, NO_PERMISSION, r)
                self.assertIn("start-up settings", r.remark)
            r = c.request(ns.GET_NAMESRV_CONFIG)
            self.assertNotIn(b"aclEnable", r.body)
            self.assert_refused(c.request(ns.PUT_KV_CONFIG, {"namespace": "a", "key": "b",
                                                             "value": "c"}),
                                "no AccessKey", "ACL still on after the 318 attempts")
            # private admin codes need admin on top of the cluster signature
            self.assert_refused(c.request(ACL_LIST, private(ACL_LIST)), "no AccessKey",
                                "acl list unsigned")
            self.assert_refused(c.request(ACL_LIST, private(ACL_LIST, access_key="brk")),
                                "role admin required", "acl list by a broker")
            self.assert_refused(c.request(ACL_LIST, private(ACL_LIST, access_key="root",
                                                            secret_key="wrong")),
                                "signature mismatch", "acl list, wrong secret key")
            self.assertEqual(c.request(ACL_LIST, private(ACL_LIST, access_key="root")).code, 0)
            self.assertEqual(c.request(MEMBER_LIST, private(MEMBER_LIST)).code, 0)
        # raftnsctl: unsigned refused, signed (flags or environment) accepted
        rc, out, err = ctl(nd, "kv", "put", "ns", "k", "v")
        self.assertEqual(rc, 1, (out, err))
        self.assertIn("no AccessKey", err)
        rc, out, err = ctl(nd, "kv", "put", "ns", "k", "v", creds="root")
        self.assertEqual(rc, 0, err)
        rc, out, err = ctl(nd, "kv", "put", "ns", "k", "v2",
                           env_creds=("root", SK["root"]))
        self.assertEqual(rc, 0, err)
        rc, out, err = ctl(nd, "kv", "put", "ns", "k", "v", creds="ro")
        self.assertEqual(rc, 1)
        self.assertIn("role admin required", err)
        rc, out, err = ctl(nd, "acl", "add", "new", "new-secret-1", "broker",
                           "--networks", "127.0.0.0/8,10.1.0.0/16", creds="root")
        self.assertEqual(rc, 0, err)
        rc, out, err = ctl(nd, "acl", "list", creds="root")
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"new\s+broker\s+127\.0\.0\.0/8,10\.1\.0\.0/16")
        for a in ACCOUNTS:
            self.assertNotIn(a["secretKey"], out)
        self.assertNotIn("new-secret-1", out)
        doc = acl_list(nd)
        self.assertIn({"accessKey": "new", "role": "broker",
                       "networks": ["127.0.0.0/8", "10.1.0.0/16"]}, doc["accounts"])
        self.assertNotIn("new-secret-1", json.dumps(doc))
        code, status = nd.http_get("/status")
        code, metrics = nd.http_get("/metrics")
        for text in (status, metrics, nd.log_text().encode()):
            self.assertNotIn(b"new-secret-1", text)
            self.assertNotIn(b"root-secret-123", text)
        with nd.conn() as c:
            rq = register_request("broker-n", "127.0.0.1:10921")
            ext = dict(rq[1])
            ext["AccessKey"] = "new"
            ext["Signature"] = signature(ext, rq[2], "new-secret-1")
            self.assertEqual(c.request(rq[0], ext, rq[2]).code, 0)
        rc, out, err = ctl(nd, "acl", "add", "x", "y", "superuser", creds="root")
        self.assertEqual(rc, 1)
        rc, out, err = ctl(nd, "acl", "remove", "new", creds="root")
        self.assertEqual(rc, 0, err)
        self.assertNotIn("new", [a["accessKey"] for a in acl_list(nd)["accounts"]])


class TestReadsAndNetworks(ClusterCase):
    def test_anonymous_read_off(self):
        cl = self.cluster(1, namesrv={"aclAnonymousRead": "false"})
        nd = cl[1]
        ext = {"topic": "none"}
        with nd.conn() as c:
            self.assert_refused(c.request(ns.GET_ROUTEINFO_BY_TOPIC, ext), "no AccessKey",
                                "anonymous read")
            self.assert_refused(c.request(ns.GET_BROKER_CLUSTER_INFO), "no AccessKey",
                                "anonymous cluster info")
            self.assert_refused(c.request(ns.GET_ROUTEINFO_BY_TOPIC,
                                          signed(ext, b"", "ro", "nope")),
                                "signature mismatch", "read, wrong secret")
            self.assertEqual(c.request(ns.GET_ROUTEINFO_BY_TOPIC, signed(ext, b"", "ro")).code,
                             17)
            self.assertEqual(c.request(ns.GET_BROKER_CLUSTER_INFO, signed({}, b"", "brk")).code,
                             0)
            # a held consistent read is answered once confirmed (not re-checked)
            cext = {"topic": "none", "raftnsConsistent": "true"}
            self.assertEqual(c.request(ns.GET_ROUTEINFO_BY_TOPIC,
                                       signed(cext, b"", "ro")).code, 17)

    def test_broker_networks(self):
        cl = self.cluster(1, namesrv={"aclBrokerNetworks": "10.9.0.0/16, 127.0.0.1/32"})
        nd = cl[1]
        code, ext, body = register_request()
        with nd.conn() as c:
            self.assertEqual(c.request(code, ext, body).code, 0, "unsigned broker admitted")
            self.assertEqual(c.request(ns.BROKER_HEARTBEAT, broker_ref()).code, 0)
            self.assert_refused(c.request(ns.PUT_KV_CONFIG, {"namespace": "a", "key": "b"}),
                                "role admin required", "a broker network is no admin")
            self.assertEqual(c.request(ns.PUT_KV_CONFIG,
                                       signed({"namespace": "a", "key": "b"}, b"",
                                              "root")).code, 0)
        cl2 = self.cluster(1, namesrv={"aclBrokerNetworks": "10.0.0.0/8"})
        with cl2[1].conn() as c:
            self.assert_refused(c.request(code, ext, body), "no AccessKey",
                                "broker outside aclBrokerNetworks")


class TestFloodAndBootstrap(ClusterCase):
    def test_refusal_flood_is_rate_limited(self):
        cl = self.cluster(1)
        nd = cl[1]
        n = 2000
        t0 = time.monotonic()
        with nd.conn() as c:
            replies = c.pipeline([{"code": ns.PUT_KV_CONFIG,
                                   "ext": {"namespace": "a", "key": str(i)}}
                                  for i in range(n)], timeout=T(30.0))
        elapsed = time.monotonic() - t0
        self.assertTrue(all(r.code == NO_PERMISSION for r in replies))
        self.assertGreaterEqual(refusals(nd).get("no_access_key", 0), n)
        wait_until(lambda: "refused: no AccessKey" in nd.log_text(), T(5.0), "refusal lines")
        lines = nd.log_text().count("refused: no AccessKey")
        # at most 10 lines a second, plus one window of slack
        self.assertLessEqual(lines, 10 * (int(elapsed) + 2), "%d lines in %.1fs" % (lines, elapsed))
        self.assertGreater(lines, 0)

    def test_first_admin_without_seed(self):
        cl = self.cluster(1, accounts=None)
        nd = cl[1]
        self.assertEqual(acl_list(nd, creds=None)["accounts"], [])
        # an empty table: acl add needs only the cluster secret (then never again)
        rc, out, err = ctl(nd, "acl", "add", "root", SK["root"], "admin")
        self.assertEqual(rc, 0, err)
        rc, out, err = ctl(nd, "acl", "add", "other", "other-secret", "admin")
        self.assertEqual(rc, 1)
        self.assertIn("no AccessKey", err)
        rc, out, err = ctl(nd, "acl", "add", "brk", SK["brk"], "broker", creds="root")
        self.assertEqual(rc, 0, err)
        self.assertEqual([a["accessKey"] for a in acl_list(nd)["accounts"]], ["brk", "root"])
        # the wrong cluster secret is refused before the ACL gate
        with nd.conn() as c:
            r = c.request(ACL_LIST, private(ACL_LIST, access_key="root",
                                            cluster="wrong-cluster-secret"))
            self.assertEqual(r.code, NO_PERMISSION)
            self.assertIn("private request refused", r.remark)


class TestThreeNodes(ClusterCase):
    def test_forwarded_snapshot_restart(self):
        cl = self.cluster(3, snapshot_threshold=8)
        leader = cl.leader()
        f = cl.followers(leader)[0]
        code, ext, body = register_request()
        with f.conn() as c:
            self.assert_refused(c.request(code, ext, body), "no AccessKey",
                                "unsigned register through a follower")
            self.assert_refused(c.request(code, signed(ext, body, "brk", "bad"), body),
                                "signature mismatch", "wrong secret through a follower")
            self.assert_accepted(c.request(code, signed(ext, body, "brk"), body),
                                 "signed register through a follower")
        # raftnsctl acl add on a follower is forwarded; every node ends with it
        rc, out, err = ctl(f, "acl", "add", "late", "late-secret-1", "admin", creds="root")
        self.assertEqual(rc, 0, err)
        rc, out, err = ctl(f, "acl", "remove", "far", creds="root")
        self.assertEqual(rc, 0, err)
        for i in range(20):  # more than snapshotThreshold entries: snapshots are taken
            kv = {"namespace": "n", "key": "k%d" % i, "value": "v"}
            target = cl.all()[i % 3]
            with target.conn() as c:
                self.assert_accepted(c.request(ns.PUT_KV_CONFIG, signed(kv, b"", "late")),
                                     "put through node %d" % target.id)
        cl.wait_converged()
        want = acl_list(leader)
        self.assertEqual(sorted(a["accessKey"] for a in want["accounts"]),
                         ["brk", "late", "ro", "root"])
        for nd in cl.all():
            wait_until(lambda nd=nd: acl_list(nd) == want, T(10.0), "same accounts on %r" % nd)
        for nd in cl.all():
            cl.restart(nd.id)
        cl.leader()
        cl.wait_converged()
        for nd in cl.all():
            self.assertEqual(acl_list(nd), want)
            self.assertIn("restored a snapshot", nd.log_text())
            with nd.conn() as c:
                kv = {"namespace": "n", "key": "after", "value": str(nd.id)}
                self.assert_accepted(c.request(ns.PUT_KV_CONFIG, signed(kv, b"", "late")),
                                     "put after restart on node %d" % nd.id)
                self.assert_refused(c.request(ns.PUT_KV_CONFIG, signed(kv, b"", "far")),
                                    "unknown AccessKey", "a removed account")
        cl.wait_converged()


if __name__ == "__main__":
    harness.main()
