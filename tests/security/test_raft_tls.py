"""raftTls on the raft peer port of real raftns processes: a 3-node cluster with
raftTls=enforcing (TLS 1.3, both members presenting certificates of the cluster CA) forms,
replicates a few hundred writes and converges; then, against every node's raft port, a plain-TCP
attacker that knows the cluster secret (raftns's handshake and libraft's), a TLS client with a
certificate of another CA and one without a certificate are refused, and a TLS client with a
valid certificate meets the HMAC handshake inside TLS (and is refused as a non-member). Term,
leader, commit index and state are unchanged after all of it and each refusal is counted in
raftns_peer_refused_total. `openssl s_client` sees TLSv1.3 on the raft port and cannot get
TLS 1.2. A node with raftTls but no CA (or an unreadable certificate) exits with status 2,
UPDATE_NAMESRV_CONFIG cannot turn raftTls off, and SIGHUP gives new raft connections the reloaded
certificate (a broken file keeps the old one). The relay's backpressure test runs under raftTls
too. Certificates come from gen_certs.sh in a temp dir
removed at the end; the attacks' wire helpers are test_raft_port.py's."""

import os
import re
import shutil
import signal
import ssl
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "process"))
sys.path.insert(0, HERE)
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
import test_cluster_backpressure as bp  # noqa: E402
import test_raft_port as rp  # noqa: E402
from harness import T, wait_until  # noqa: E402

CERTS = None
N_WRITES = 300


def setUpModule():
    global CERTS
    CERTS = tempfile.mkdtemp(prefix="raftns-raft-tls-certs-")
    subprocess.run([os.path.join(HERE, "gen_certs.sh"), CERTS], check=True, timeout=T(60))


def tearDownModule():
    shutil.rmtree(CERTS, ignore_errors=True)


def cert(name):
    return os.path.join(CERTS, name)


def raft_tls_sets(ca="ca.pem"):
    """raftTls with the node certificate; the client port stays plain (tlsMode disabled), so
    everything TLS here is the raft port's."""
    sets = {"raftTls": "enforcing", "tlsMode": "disabled",
            "tlsServerCertPath": cert("server.pem"), "tlsServerKeyPath": cert("server.key")}
    if ca:
        sets["tlsServerTrustCertPath"] = cert(ca)
    return sets


def tls_ctx(name=None, ca="ca.pem"):
    """A client context verifying the raft listener (its IP); name = certificate presented."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_verify_locations(cert(ca))
    if name:
        ctx.load_cert_chain(cert(name + ".pem"), cert(name + ".key"))
    return ctx


def tls_dial(nd, ctx):
    """A TLS connection to nd's raft port (a TLS 1.3 client finishes its handshake before the
    server has judged its certificate: a refusal shows on the first read)."""
    s = rp.dial(nd)
    return ctx.wrap_socket(s, server_hostname="127.0.0.1")


def challenge_over(sock, nd, my_id, my_addr):
    """Sends raftns's HELLO on sock and returns the listener's CHALLENGE head (80 bytes), or
    raises rp.Closed."""
    rp.send_all(sock, rp.hello(my_id, my_addr, nd.id, os.urandom(32)))
    return rp.recv_exact(sock, 80, T(5.0))


def refused_total(nd):
    code, body = nd.http_get("/metrics")
    m = re.search(rb"^raftns_peer_refused_total (\d+)$", body, re.M)
    return int(m.group(1)) if code == 200 and m else -1


class RaftTlsCluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = clusterh.config_unsupported()
        if why:
            raise unittest.SkipTest(why)
        del harness.TEST_NODES[:]
        # Scaled like test_raft_port's: no leader change on a busy machine either.
        cls.cluster = clusterh.Cluster(3, election_ms=int(T(2.0) * 1000), heartbeat_ms=100,
                                       namesrv=raft_tls_sets())
        for nd in cls.cluster.all():
            nd.extra_args += rp.NO_CHECKPOINTS
        try:
            cls.cluster.start()
            leader = cls.cluster.leader()
            with leader.conn(timeout=T(10.0)) as c:
                for i in range(N_WRITES):
                    r = c.request(ns.PUT_KV_CONFIG, {"namespace": "sec", "key": "k%d" % i,
                                                     "value": "v%d" % i}, timeout=T(10.0))
                    if r.code != 0:
                        raise AssertionError("KV put %d: %r" % (i, r))
                r = c.request(ns.PUT_KV_CONFIG, {"namespace": "sec", "key": "k",
                                                 "value": "v1"}, timeout=T(10.0))
                if r.code != 0:
                    raise AssertionError("KV put: %r" % r)
            cls.cluster.wait_converged()
            cls.baseline = cls.state()
        except BaseException:
            cls.cluster.cleanup(check=False)
            raise

    @classmethod
    def tearDownClass(cls):
        cls.cluster.cleanup(check=True)

    def setUp(self):
        harness.TEST_NODES[:] = self.cluster.all()

    @classmethod
    def state(cls):
        out = {}
        for nd in cls.cluster.all():
            st = nd.status()
            with nd.conn(timeout=T(3.0)) as c:
                kv = c.request(ns.GET_KV_CONFIG, {"namespace": "sec", "key": "k"}, timeout=T(3.0))
            out[nd.id] = {k: st.get(k) for k in ("role", "term", "commit_index", "applied_index",
                                                  "digest", "diverged", "ready")}
            out[nd.id]["leader"] = clusterh.leader_id_of(st)
            out[nd.id]["kv"] = (kv.code, (kv.ext or {}).get("value"))
        return out

    def assert_unchanged(self, what):
        for nd in self.cluster.all():
            self.assertTrue(nd.alive(), "node %d died after %s\n%s" % (nd.id, what,
                                                                       nd.log_tail()))
            nd.assert_clean_log()
        self.assertEqual(self.state(), self.baseline, "state changed after %s" % what)

    def assert_refused_each(self, what, fn, log_needle):
        """fn(nd) attacks nd; each node counts one more refusal, node 1 logs log_needle (its
        WARN lines are rate-limited to one a second: the attack repeats until one shows)."""
        nd1 = self.cluster[1]
        start = len(nd1.log_text())
        for nd in self.cluster.all():
            before = refused_total(nd)
            fn(nd)
            wait_until(lambda nd=nd: refused_total(nd) > before, T(10.0),
                       "node %d to count the refusal (%s)" % (nd.id, what))

        def logged():
            if log_needle in nd1.log_text()[start:]:
                return True
            fn(nd1)
            return False
        wait_until(logged, T(10.0), "node 1 to log %r" % log_needle, interval=0.2)
        self.assert_unchanged(what)

    def other(self, nd):
        return self.cluster[[x.id for x in self.cluster.all() if x.id != nd.id][0]]

    def test_cluster_formed_replicated_over_tls(self):
        for nd in self.cluster.all():
            log = nd.log_text()
            self.assertIn("peer: raftTls enforcing (TLS 1.3, mutual)", log)
            self.assertNotIn("peer: refused", log)  # members never refused each other
            with nd.conn(timeout=T(3.0)) as c:
                for i in (0, N_WRITES // 2, N_WRITES - 1):
                    r = c.request(ns.GET_KV_CONFIG, {"namespace": "sec", "key": "k%d" % i},
                                  timeout=T(3.0))
                    self.assertEqual((r.code, (r.ext or {}).get("value")), (0, "v%d" % i))
            st = nd.status()
            self.assertGreaterEqual(st.get("applied_index"), N_WRITES)
        self.assertIsNone(self.cluster.converged())

    def test_plain_attacker_with_secret_refused(self):
        def fn(nd):
            o = self.other(nd)
            s = rp.dial(nd)
            try:
                with self.assertRaises(rp.Closed):  # no CHALLENGE: TLS wanted a ClientHello
                    challenge_over(s, nd, o.id, rp.raft_addr(o))
            finally:
                s.close()
            s = rp.dial(nd)
            rp.send_all(s, rp.legacy_handshake(o.id, rp.raft_addr(o)) +
                        rp.append_entries(1000, [(1000, rp.COMMAND, rp.forged_command())],
                                          commit=1 << 20))
            self.assertTrue(rp.closed_within(s, T(5.0)), harness.expired(
                "libraft handshake closed", T(5.0), "still open"))
            s.close()
        self.assert_refused_each("a plain attacker with the secret", fn, "TLS: ")

    def tls_client_refused(self, ctx, what):
        def fn(nd):
            o = self.other(nd)
            try:
                s = tls_dial(nd, ctx)
            except (ssl.SSLError, OSError):
                return  # refused during the handshake itself
            try:
                with self.assertRaises((rp.Closed, ssl.SSLError, OSError)):
                    challenge_over(s, nd, o.id, rp.raft_addr(o))
            finally:
                s.close()
        return fn

    def test_tls_client_of_another_ca_refused(self):
        self.assert_refused_each("a TLS client of another CA",
                                 self.tls_client_refused(tls_ctx("rogue"), "rogue"),
                                 "certificate verify failed")

    def test_tls_client_without_certificate_refused(self):
        self.assert_refused_each("a TLS client without a certificate",
                                 self.tls_client_refused(tls_ctx(), "no certificate"),
                                 "peer did not return a certificate")

    def test_valid_certificate_meets_hmac_handshake_inside_tls(self):
        """The TLS layer passes a client with a valid certificate; the raftns handshake then
        runs inside TLS and refuses an id that is not a member."""
        def fn(nd):
            s = tls_dial(nd, tls_ctx("client"))
            try:
                self.assertEqual(s.version(), "TLSv1.3")
                head = challenge_over(s, nd, 99, "127.0.0.1:1")
                self.assertEqual(head[:4], b"RNSC")
                lid = struct.unpack(">Q", head[8:16])[0]
                self.assertEqual(lid, nd.id)
                # Any RESPONSE: a wrong MAC or (with the right one) a non-member, refused.
                rp.send_all(s, b"RNSR" + rp.be16(1) + rp.be16(0) + b"\0" * 32)
                self.assertTrue(rp.closed_within(s, T(5.0)), harness.expired(
                    "closed after RESPONSE", T(5.0), "still open"))
            finally:
                s.close()
        self.assert_refused_each("a valid certificate, then a bad handshake", fn,
                                 "MAC does not verify")

    def test_openssl_s_client_sees_tls13_only(self):
        nd = self.cluster[1]
        base = ["openssl", "s_client", "-connect", "127.0.0.1:%d" % nd.raft_port,
                "-CAfile", cert("ca.pem"), "-cert", cert("client.pem"), "-key",
                cert("client.key"), "-brief"]
        p = subprocess.run(base + ["-verify_ip", "127.0.0.1", "-verify_return_error"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=T(20.0))
        out = (p.stdout + p.stderr).decode("utf-8", "replace")
        self.assertIn("TLSv1.3", out)
        self.assertIn("Verification: OK", out)
        p12 = subprocess.run(base + ["-tls1_2"], stdin=subprocess.DEVNULL, capture_output=True,
                             timeout=T(20.0))
        out12 = (p12.stdout + p12.stderr).decode("utf-8", "replace")
        self.assertNotEqual(p12.returncode, 0, out12)
        self.assertNotIn("Protocol version: TLSv1.2", out12)
        self.assert_unchanged("openssl s_client")

    def test_update_namesrv_config_cannot_turn_raft_tls_off(self):
        nd = self.cluster.leader()
        with nd.conn(timeout=T(5.0)) as c:
            r = c.request(ns.UPDATE_NAMESRV_CONFIG,
                          body=ns.properties_text({"raftTls": "disabled"}), timeout=T(5.0))
            self.assertNotEqual(r.code, 0, r)
            self.assertIn("raftTls", r.remark or "")
            r = c.request(ns.GET_NAMESRV_CONFIG, timeout=T(5.0))
            self.assertEqual(r.code, 0)
            self.assertNotIn(b"raftTls", r.body)
        self.assert_unchanged("318 raftTls=disabled")


class RaftTlsBackpressure(bp.Backpressure):
    """tests/process/test_cluster_backpressure.py under raftTls: the leader's relay to a paused
    follower stops reading libraft's pipe once the ciphertext queued towards it (with what the
    TLS session holds) passes the bound, and the follower catches up after SIGCONT."""

    @property
    def NAMESRV(self):
        return raft_tls_sets()

    def test_paused_follower_catches_up(self):
        super().test_paused_follower_catches_up()
        for nd in self.cluster.all():
            self.assertIn("peer: raftTls enforcing", nd.log_text())


class RaftTlsNode(unittest.TestCase):
    def test_sighup_reloads_for_new_raft_connections(self):
        live = tempfile.mkdtemp(prefix="raftns-raft-tls-live-")
        self.addCleanup(shutil.rmtree, live, True)
        pem, key = os.path.join(live, "live.pem"), os.path.join(live, "live.key")
        shutil.copy(cert("server.pem"), pem)
        shutil.copy(cert("server.key"), key)
        nd = harness.Node(dict(raft_tls_sets(), tlsServerCertPath=pem, tlsServerKeyPath=key))
        self.addCleanup(nd.cleanup)
        nd.start()

        def raft_cn():
            with tls_dial(nd, tls_ctx("client")) as s:
                return dict(x[0] for x in s.getpeercert()["subject"])["commonName"]
        self.assertEqual(raft_cn(), "raftns test server")
        for src, dst in ((cert("server2.pem"), pem), (cert("server2.key"), key)):
            shutil.copy(src, dst + ".new")
            os.replace(dst + ".new", dst)
        os.kill(nd.pid, signal.SIGHUP)
        wait_until(lambda: raft_cn() == "raftns test server 2", T(10.0),
                   "new raft connections to show the new certificate")
        with open(pem, "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
        os.kill(nd.pid, signal.SIGHUP)
        wait_until(lambda: "raftTls reload failed" in nd.log_text(), T(10.0),
                   "the failed reload logged")
        self.assertTrue(nd.alive())
        self.assertEqual(raft_cn(), "raftns test server 2")

    def test_bad_settings_exit_2(self):
        for sets, needle in (
                (raft_tls_sets(ca=None), "tlsServerTrustCertPath"),
                ({"raftTls": "enforcing"}, "raftTls enforcing needs"),
                (dict(raft_tls_sets(), raftTls="sometimes"), "raftTls"),
                (dict(raft_tls_sets(), tlsServerCertPath=cert("nope.pem")), "nope.pem"),
                (dict(raft_tls_sets(), tlsServerKeyPath=cert("client.key")), "client.key")):
            nd = harness.Node(sets)
            try:
                nd.start(wait=False)
                rc = nd.proc.wait(T(20.0))
                self.assertEqual(rc, 2, "%r: %s" % (sets, nd.log_tail()))
                self.assertIn(needle, nd.log_text())
            finally:
                nd.cleanup(check=False)


if __name__ == "__main__":
    harness.main()
