"""TLS on the client port against real raftns processes: permissive (TLS and plain on one port,
the same bytes on both), enforcing (plain refused), client certificates (required: refused
without one or with one of another CA, accepted with a valid one), a garbage ClientHello closes
only its own connection, SIGHUP reloads the certificate without dropping connections (and a bad
reload keeps serving), a bad certificate path is exit status 2, a 3-node enforcing cluster
forwards a follower's write to the leader over TLS (peer.c) and converges, and raftnsctl --tls.
Clients: Python's ssl module and `openssl s_client`. Certificates are generated per run by
gen_certs.sh into a temp dir that is removed at the end."""

import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
import warnings
import http.client

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "process"))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, wait_until  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RAFTNSCTL = os.environ.get("RAFTNSCTL_BIN",
                           os.path.join(os.path.dirname(harness.RAFTNS_BIN), "raftnsctl"))
CERTS = None  # temp dir with the generated certificates


def setUpModule():
    global CERTS
    CERTS = tempfile.mkdtemp(prefix="raftns-tls-certs-")
    subprocess.run([os.path.join(HERE, "gen_certs.sh"), CERTS], check=True, timeout=T(60))


def tearDownModule():
    shutil.rmtree(CERTS, ignore_errors=True)


def cert(name):
    return os.path.join(CERTS, name)


def client_ctx(name=None, ca="ca.pem"):
    """A verifying client context (server name checked); name = client certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_verify_locations(cert(ca))
    if name:
        ctx.load_cert_chain(cert(name + ".pem"), cert(name + ".key"))
    return ctx


def tls_sets(mode=None, auth=None, cert_name="server", java=False):
    k = (("tls.server.mode", "tls.server.certPath", "tls.server.keyPath",
          "tls.server.trustCertPath", "tls.server.need.client.auth") if java else
         ("tlsMode", "tlsServerCertPath", "tlsServerKeyPath", "tlsServerTrustCertPath",
          "tlsServerNeedClientAuth"))
    sets = {k[1]: cert(cert_name + ".pem"), k[2]: cert(cert_name + ".key"), k[3]: cert("ca.pem")}
    if mode:
        sets[k[0]] = mode
    if auth:
        sets[k[4]] = auth
    return sets


def register(c, name="broker-a", topics=("TopicA", "TopicB")):
    body = ns.register_body(list(topics), ns.data_version(1))
    return c.request(ns.REGISTER_BROKER, ns.register_ext(name, 0, "127.0.0.1:10911",
                                                         "127.0.0.1:10912", "c1", body), body,
                     timeout=T(10.0))


def refused(addr, ctx, what):
    """True when a request on a connection made with ctx gets no reply: the handshake or the
    first record fails (TLS 1.3 reports a missing client certificate after the handshake)."""
    try:
        with ns.Conn(addr, timeout=T(5.0), tls=ctx) as c:
            c.send_raw(ns.build_request(ns.GET_BROKER_CLUSTER_INFO, opaque=7))
            return c.read_frame(timeout=T(5.0)) is None and c.wait_closed(T(5.0))
    except (ssl.SSLError, ns.ConnectionClosed, ConnectionError):
        return True


def peer_cn(addr, ctx):
    with ns.Conn(addr, timeout=T(5.0), tls=ctx) as c:
        subject = dict(x[0] for x in c.sock.getpeercert()["subject"])
        return subject["commonName"]


class NodeTLS(harness.NodeTestCase):
    START = False

    def tls_node(self, sets, tls="default", **kw):
        n = harness.Node(sets, tls=client_ctx() if tls == "default" else tls, **kw)
        self.nodes.append(n)
        return n.start()

    def test_permissive_serves_tls_and_plain_the_same(self):
        nd = self.tls_node(tls_sets())  # a certificate and no mode: permissive
        plain = ns.Conn(nd.addr, timeout=T(5.0))
        self.addCleanup(plain.close)
        tls = ns.Conn(nd.addr, timeout=T(5.0), tls=client_ctx())
        self.addCleanup(tls.close)
        self.assertEqual(tls.sock.version(), "TLSv1.3")
        self.assertEqual(register(plain).code, 0)
        for code, ext in ((ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}),
                          (ns.GET_BROKER_CLUSTER_INFO, None), (ns.GET_ALL_TOPIC_LIST, None)):
            a = plain.request(code, ext, timeout=T(5.0))
            b = tls.request(code, ext, timeout=T(5.0))
            self.assertEqual(a.code, 0)
            self.assertEqual((a.code, a.remark, a.body), (b.code, b.remark, b.body))
        # A big registration over TLS (many records each way), the same answers on both.
        many = ["BigTopic%05d" % i for i in range(4000)]
        self.assertEqual(register(tls, "broker-big", many).code, 0)
        a = plain.request(ns.GET_ALL_TOPIC_LIST, timeout=T(10.0))
        b = tls.request(ns.GET_ALL_TOPIC_LIST, timeout=T(10.0))
        self.assertGreater(len(a.body), 4000 * 12)
        self.assertEqual((a.code, a.body), (b.code, b.body))
        self.assertIn("tls: permissive", nd.log_text())

    def test_openssl_s_client_verifies(self):
        nd = self.tls_node(tls_sets("enforcing"))
        p = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % nd.client_port,
                            "-CAfile", cert("ca.pem"), "-verify_ip", "127.0.0.1",
                            "-verify_return_error", "-brief"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=T(20.0))
        out = (p.stdout + p.stderr).decode("utf-8", "replace")
        self.assertEqual(p.returncode, 0, out)
        self.assertIn("Verification: OK", out)
        self.assertIn("TLSv1.3", out)
        # TLS 1.2 is accepted too (the minimum); 1.1 is not.
        p12 = subprocess.run(["openssl", "s_client", "-connect",
                              "127.0.0.1:%d" % nd.client_port, "-CAfile", cert("ca.pem"),
                              "-tls1_2", "-brief"], stdin=subprocess.DEVNULL,
                             capture_output=True, timeout=T(20.0))
        self.assertIn("TLSv1.2", (p12.stdout + p12.stderr).decode("utf-8", "replace"))
        ctx11 = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx11.check_hostname, ctx11.verify_mode = False, ssl.CERT_NONE
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                ctx11.minimum_version = ctx11.maximum_version = ssl.TLSVersion.TLSv1_1
        except (ValueError, ssl.SSLError):
            return  # this Python cannot even offer TLS 1.1
        self.assertTrue(refused(nd.addr, ctx11, "TLS 1.1"))

    def test_enforcing_refuses_plain(self):
        nd = self.tls_node(tls_sets("enforcing"))
        with ns.Conn(nd.addr, timeout=T(5.0)) as c:
            c.send_raw(ns.build_request(ns.GET_BROKER_CLUSTER_INFO, opaque=3))
            harness.assert_closed(c, T(5.0), "plain connection closed")
        wait_until(lambda: "plaintext connection refused" in nd.log_text(), T(5.0),
                   "the refusal logged")
        with nd_conn(self, nd) as c:
            self.assertEqual(c.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(5.0)).code, 0)
            # Start-up settings: UPDATE_NAMESRV_CONFIG cannot switch TLS off or point it at
            # other files, and GET_NAMESRV_CONFIG does not show them.
            c.request(ns.UPDATE_NAMESRV_CONFIG, body=ns.properties_text(
                {"tlsMode": "disabled", "tls.server.mode": "disabled",
                 "tlsServerCertPath": "/etc/passwd"}), timeout=T(5.0))
            r = c.request(ns.GET_NAMESRV_CONFIG, timeout=T(5.0))
            self.assertEqual(r.code, 0)
            self.assertNotIn(b"tls", r.body.lower())
        with ns.Conn(nd.addr, timeout=T(5.0)) as c:
            c.send_raw(ns.build_request(ns.GET_BROKER_CLUSTER_INFO, opaque=4))
            harness.assert_closed(c, T(5.0), "plain connection closed after a 318")

    def test_disabled_refuses_tls(self):
        nd = self.tls_node({}, tls=None)
        self.assertTrue(refused(nd.addr, client_ctx(), "TLS on a plain node"))
        with ns.Conn(nd.addr, timeout=T(5.0)) as c:
            self.assertEqual(c.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(5.0)).code, 0)

    def test_client_auth_required(self):
        # Java's spellings of the keys.
        nd = self.tls_node(tls_sets("enforcing", "require", java=True), tls=client_ctx("client"))
        self.assertTrue(refused(nd.addr, client_ctx(), "no client certificate"))
        wait_until(lambda: "peer did not return a certificate" in nd.log_text(), T(5.0),
                   "the missing certificate logged")
        self.assertTrue(refused(nd.addr, client_ctx("rogue"), "a certificate of another CA"))
        wait_until(lambda: "certificate verify failed" in nd.log_text(), T(5.0),
                   "the rogue certificate logged")
        with nd_conn(self, nd) as c:
            self.assertEqual(register(c).code, 0)
            r = c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}, timeout=T(5.0))
            self.assertEqual(r.code, 0)

    def test_client_auth_optional(self):
        nd = self.tls_node(tls_sets("enforcing", "optional"))
        for ctx in (client_ctx(), client_ctx("client")):
            with ns.Conn(nd.addr, timeout=T(5.0), tls=ctx) as c:
                self.assertEqual(c.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(5.0)).code, 0)
        self.assertTrue(refused(nd.addr, client_ctx("rogue"), "a certificate of another CA"))

    def test_garbage_client_hello_closes_only_that_connection(self):
        nd = self.tls_node(tls_sets())
        plain = ns.Conn(nd.addr, timeout=T(5.0))
        self.addCleanup(plain.close)
        tls = ns.Conn(nd.addr, timeout=T(5.0), tls=client_ctx())
        self.addCleanup(tls.close)
        self.assertEqual(plain.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(5.0)).code, 0)
        self.assertEqual(tls.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(5.0)).code, 0)
        garbage = [b"\x16\x03\x01\x02\x00" + bytes((i * 37) & 0xFF for i in range(512)),
                   b"\x16" + b"\xff" * 4096,  # a record length far over the limit
                   b"\x16\x03\x03\x00\x04\x01\xff\xff\xff"]  # a ClientHello claiming 16 MiB
        for g in garbage:
            with ns.Conn(nd.addr, timeout=T(5.0)) as bad:
                bad.send_raw(g)
                harness.assert_closed(bad, T(5.0), "garbage %r closed" % g[:8])
        wait_until(lambda: nd.log_text().count("TLS handshake failed") >= 3, T(5.0),
                   "the failed handshakes logged")
        self.assertTrue(nd.alive())
        self.assertEqual(plain.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(5.0)).code, 0)
        self.assertEqual(tls.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(5.0)).code, 0)

    def test_stalled_handshake_is_closed(self):
        """A client that starts a handshake and stops must not hold its session until the
        idle sweep (120 s): the handshake deadline (NS_TLS_HANDSHAKE_MS, 10 s) closes it,
        while a client that finished its handshake and stays quiet keeps its connection."""
        nd = self.tls_node(tls_sets())
        quiet = ns.Conn(nd.addr, timeout=T(5.0), tls=client_ctx())
        self.addCleanup(quiet.close)
        self.assertEqual(quiet.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(5.0)).code, 0)
        t0 = time.monotonic()
        with ns.Conn(nd.addr, timeout=T(5.0)) as stalled:
            stalled.send_raw(b"\x16\x03\x01\x02\x00")  # a record header, then nothing
            harness.assert_closed(stalled, T(30.0), "stalled handshake closed")
        waited = time.monotonic() - t0
        self.assertGreater(waited, 8.0, "closed before the handshake deadline")
        self.assertIn("TLS handshake not done within", nd.log_text())
        self.assertEqual(quiet.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(5.0)).code, 0)

    def test_sighup_reloads_certificate_without_dropping(self):
        live = tempfile.mkdtemp(prefix="raftns-tls-live-")
        self.addCleanup(shutil.rmtree, live, True)
        pem, key = os.path.join(live, "live.pem"), os.path.join(live, "live.key")
        shutil.copy(cert("server.pem"), pem)
        shutil.copy(cert("server.key"), key)
        nd = self.tls_node({"tlsMode": "enforcing", "tlsServerCertPath": pem,
                            "tlsServerKeyPath": key})
        self.assertEqual(peer_cn(nd.addr, client_ctx()), "raftns test server")
        old = ns.Conn(nd.addr, timeout=T(5.0), tls=client_ctx())
        self.addCleanup(old.close)
        self.assertEqual(register(old).code, 0)
        # New files in place (write to a temp name, then rename, as an operator would).
        for src, dst in ((cert("server2.pem"), pem), (cert("server2.key"), key)):
            shutil.copy(src, dst + ".new")
            os.replace(dst + ".new", dst)
        os.kill(nd.pid, signal.SIGHUP)
        wait_until(lambda: peer_cn(nd.addr, client_ctx()) == "raftns test server 2", T(10.0),
                   "new connections to show the new certificate")
        r = old.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}, timeout=T(5.0))
        self.assertEqual(r.code, 0, "the established connection stopped working")
        self.assertEqual(old.sock.getpeercert()["subject"][0][0][1], "raftns test server")
        # A broken file: the reload fails, the node keeps serving with the last good one.
        with open(pem, "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
        n_fail = nd.log_text().count("reload failed")
        os.kill(nd.pid, signal.SIGHUP)
        wait_until(lambda: nd.log_text().count("reload failed") > n_fail, T(10.0),
                   "the failed reload logged")
        self.assertTrue(nd.alive())
        self.assertEqual(peer_cn(nd.addr, client_ctx()), "raftns test server 2")
        r = old.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}, timeout=T(5.0))
        self.assertEqual(r.code, 0)

    def test_bad_certificate_path_exits_2(self):
        for sets, needle in (
                ({"tlsServerCertPath": cert("nope.pem"), "tlsServerKeyPath": cert("server.key")},
                 "nope.pem"),
                ({"tlsServerCertPath": cert("server.pem"), "tlsServerKeyPath": cert("client.key")},
                 "client.key"),
                ({"tlsMode": "enforcing"}, "tlsServerCertPath"),
                ({"tlsMode": "sometimes", "tlsServerCertPath": cert("server.pem"),
                  "tlsServerKeyPath": cert("server.key")}, "tlsMode"),
                (dict(tls_sets("enforcing"), tlsServerNeedClientAuth="maybe"),
                 "tlsServerNeedClientAuth")):
            nd = harness.Node(sets)
            try:
                nd.start(wait=False)
                rc = nd.proc.wait(T(20.0))
                self.assertEqual(rc, 2, nd.log_tail())
                self.assertIn(needle, nd.log_text())
            finally:
                nd.cleanup(check=False)

    def test_https_port(self):
        nd = self.tls_node(dict(tls_sets(), httpTls="true"))
        url = "https://127.0.0.1:%d" % nd.http_port
        for path, want in (("/healthz", b"ok\n"), ("/status", b'"ready"')):
            with urllib.request.urlopen(url + path, context=client_ctx(), timeout=T(5.0)) as r:
                self.assertEqual(r.status, 200)
                self.assertIn(want, r.read())
        with self.assertRaises((OSError, http.client.HTTPException)):
            urllib.request.urlopen("http://127.0.0.1:%d/healthz" % nd.http_port,
                                   timeout=T(5.0)).read()
        with self.assertRaises(OSError) as cm:  # a client trusting another CA
            urllib.request.urlopen(url + "/healthz", context=client_ctx(ca="rogue-ca.pem"),
                                   timeout=T(5.0)).read()
        self.assertIn("CERTIFICATE_VERIFY_FAILED", str(cm.exception))
        self.assertTrue(nd.alive())

    def test_raftnsctl_tls(self):
        nd = self.tls_node(tls_sets("enforcing", "require"), tls=client_ctx("client"))
        addr = "127.0.0.1:%d" % nd.client_port

        def ctl(*args):
            return subprocess.run([RAFTNSCTL, "-n", addr, "--timeout-ms",
                                   str(int(T(5.0) * 1000))] + list(args),
                                  capture_output=True, timeout=T(30.0))
        with_cert = ["--tls-ca", cert("ca.pem"), "--tls-cert", cert("client.pem"),
                     "--tls-key", cert("client.key")]
        self.assertEqual(ctl(*with_cert, "kv", "put", "ns1", "k", "v").returncode, 0)
        r = ctl(*with_cert, "kv", "get", "ns1", "k")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"v", r.stdout)
        self.assertEqual(ctl("kv", "get", "ns1", "k").returncode, 3)  # plain: refused
        r = ctl("--tls", "--tls-ca", cert("ca.pem"), "kv", "get", "ns1", "k")
        self.assertEqual(r.returncode, 3)  # no client certificate: the server's alert says so
        self.assertIn(b"certificate required", r.stderr)
        r = ctl("--tls", "--tls-ca", cert("rogue-ca.pem"), "--tls-cert", cert("client.pem"),
                "--tls-key", cert("client.key"), "kv", "get", "ns1", "k")
        self.assertEqual(r.returncode, 3)
        self.assertIn(b"certificate verify failed", r.stderr)
        r = ctl("--tls-insecure", "--tls-cert", cert("client.pem"), "--tls-key",
                cert("client.key"), "kv", "get", "ns1", "k")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = ctl("--tls-ca", cert("nope.pem"), "kv", "get", "ns1", "k")
        self.assertEqual(r.returncode, 2)


def nd_conn(case, nd):
    c = ns.Conn(nd.addr, timeout=T(5.0), tls=nd.tls)
    case.addCleanup(c.close)
    return c


class EnforcingCluster(clusterh.ClusterTestCase):
    """Three nodes, TLS enforcing with client certificates required: a write through a follower
    reaches the leader over TLS from peer.c (which presents the node's certificate)."""

    def setUp(self):
        del harness.TEST_NODES[:]
        self.brokers = []
        self.cluster = clusterh.Cluster(3, namesrv=tls_sets("enforcing", "require"))
        for nd in self.cluster.all():
            nd.tls = client_ctx("client")
        self.cluster.start()

    def test_follower_forwards_over_tls_and_converges(self):
        lead = self.cluster.leader()
        fol = self.cluster.followers(lead)[0]
        b = self.broker()
        clusterh.write_until_acked(b, fol)
        self.cluster.wait_converged()
        for nd in self.cluster.all():
            self.assertEqual(clusterh.broker_names(clusterh.route(nd, "TopicA")), ["broker-a"])
        self.assertNotIn("plaintext connection refused", lead.log_text())
        # A KV write through the other follower too (forwarded, replicated).
        other = [nd for nd in self.cluster.followers(lead) if nd is not fol][0]
        r = other.request(ns.PUT_KV_CONFIG, {"namespace": "n", "key": "k", "value": "v"})
        self.assertEqual(r.code, 0, r)
        self.cluster.wait_converged()


class RollingToEnforcing(clusterh.ClusterTestCase):
    """The cluster file says permissive with a trust CA; nodes 1 and 2 are already switched to
    enforcing (--set), node 3 not yet: node 3, a follower, still forwards to an enforcing leader,
    because a permissive node with a trust CA speaks TLS to the other nodes."""

    def setUp(self):
        del harness.TEST_NODES[:]
        self.brokers = []
        self.cluster = clusterh.Cluster(3, namesrv=tls_sets("permissive"))
        for nd in self.cluster.all():
            nd.tls = client_ctx()
            if nd.id != 3:
                nd.extra_args += ["--set", "tlsMode=enforcing"]
        self.cluster.start()

    def test_permissive_node_forwards_to_enforcing_leader(self):
        lead = self.cluster.leader()
        if lead.id == 3:
            r = subprocess.run([RAFTNSCTL, "-n", "127.0.0.1:%d" % lead.client_port, "--secret",
                                self.cluster.config["secret"], "leader", "transfer", "1"],
                               capture_output=True, timeout=T(30.0))
            self.assertEqual(r.returncode, 0, r.stderr)
            lead = wait_until(lambda: (lambda ld: ld if ld and ld.id != 3 else None)(
                self.cluster.current_leader()), T(20.0), "leadership to move off node 3")
        fol = self.cluster[3]
        clusterh.write_until_acked(self.broker(), fol)
        self.cluster.wait_converged()
        self.assertEqual(clusterh.broker_names(clusterh.route(lead, "TopicA")), ["broker-a"])
        self.assertNotIn("plaintext connection refused", lead.log_text())


if __name__ == "__main__":
    harness.main()
