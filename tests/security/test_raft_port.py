"""Attacks on the raft peer port (raft/node/node_transport.c) of real 1- and 3-node raftns clusters: an
attacker speaking libraft 0.15's own wire format without the secret (its handshake, AppendEntries
with a higher term and forged entries, 2^32-1 entries, a 1 GiB header length, a 1-byte vote
header, an unterminated handshake address, garbage, silence), raftns's handshake with a wrong MAC
or replayed, and an attacker that knows the cluster secret (a compromised peer): an id not in the
configuration, this node's own id, a member's id from another source IP, then, posing as a member
on its host, AppendEntries with entries whose length is not a multiple of 8, 2^32-1 entries, a
1 GiB header, a RequestVote for another candidate, a snapshot with an unterminated address. After
each attack every node is alive, and term, leader, commit index, digest, KV and route state are
unchanged; the attacker's connection was refused or closed.

The raftns handshake is implemented here independently from include/raftns/wire.h (Python hmac),
so this test also checks that format. Standard library only; the cluster comes from clusterh."""

import hashlib
import hmac
import os
import socket
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "process"))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, wait_until  # noqa: E402

SECRET = b"raftns-test-secret"  # clusterh.Cluster's default
NO_CHECKPOINTS = ["--checkpoint-entries", "100000000", "--checkpoint-ms", "100000000"]

# --- libraft 0.15 uv wire format (src/uv_encoding.c, src/uv_tcp_connect.c) ---------------------

AE, AER, RV, RVR, IS, TN = 1, 2, 3, 4, 5, 6
COMMAND, BARRIER, CHANGE = 1, 2, 3


def le64(v):
    return struct.pack("<Q", v)


def message(mtype, header, payload=b"", header_len=None):
    return le64(mtype) + le64(len(header) if header_len is None else header_len) + header + payload


def append_entries(term, entries, prev_index=0, prev_term=0, commit=0, n=None):
    """entries: list of (term, type, data); data lengths are sent as given (unpadded)."""
    h = le64(term) + le64(prev_index) + le64(prev_term) + le64(commit)
    h += le64(len(entries) if n is None else n)
    for t, typ, data in entries:
        h += le64(t) + bytes([typ, 0, 0, 0]) + struct.pack("<I", len(data))
    h += le64(0)  # counted by libraft's sizeofAppendEntries, never written
    return message(AE, h, b"".join(d for _, _, d in entries))


def request_vote(term, candidate, last_index=1 << 40, last_term=1 << 40, flags=0):
    return message(RV, le64(term) + le64(candidate) + le64(last_index) + le64(last_term) +
                   le64(flags))


def legacy_handshake(node_id, addr, announced=None, terminate=True):
    """libraft 0.15's own handshake: u64 protocol 1, u64 id, u64 address length, address."""
    a = addr.encode() + (b"\0" if terminate else b"")
    a += b"\0" * (-len(a) % 8) if terminate else b""
    return le64(1) + le64(node_id) + le64(len(a) if announced is None else announced) + a


def forged_command():
    """A raftns entry (u32 BE length, a command, padding) that would put a KV pair."""
    body = b"\x01\x04" + b"\0" * 8 + b"forged"
    e = struct.pack(">I", len(body)) + body
    return e + b"\0" * (-len(e) % 8)


# --- raftns peer handshake (include/raftns/wire.h), written independently -------------------------

def be16(v):
    return struct.pack(">H", v)


def be64(v):
    return struct.pack(">Q", v)


def transcript_mac(secret, label, cid, lid, caddr, laddr, cnonce, lnonce):
    t = label + b"\0" + be16(1) + be64(cid) + be64(lid) + be16(len(caddr)) + caddr + \
        be16(len(laddr)) + laddr + cnonce + lnonce
    return hmac.new(secret, t, hashlib.sha256).digest()


def hello(from_id, from_addr, to_id, nonce):
    a = from_addr.encode()
    return b"RNSH" + be16(1) + be16(len(a)) + be64(from_id) + be64(to_id) + nonce + a


class Closed(Exception):
    pass


def recv_exact(sock, n, timeout):
    sock.settimeout(timeout)
    out = b""
    while len(out) < n:
        try:
            got = sock.recv(n - len(out))
        except (ConnectionResetError, BrokenPipeError):
            got = b""
        except socket.timeout:
            raise AssertionError(harness.expired("%d bytes from the raft port" % n, timeout,
                                                 "%d bytes: %r" % (len(out), out[:32])))
        if not got:
            raise Closed("closed after %d of %d bytes" % (len(out), n))
        out += got
    return out


def closed_within(sock, timeout):
    """True once the node closed (or reset) the connection, False if still open at timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            if not sock.recv(65536):
                return True
        except socket.timeout:
            return False
        except (ConnectionResetError, BrokenPipeError, OSError):
            return True
    return False


def send_all(sock, data):
    try:
        sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the node closed first: what we expect of most attacks


def dial(nd, src_ip="127.0.0.1"):
    s = socket.create_connection(("127.0.0.1", nd.raft_port), timeout=T(5.0),
                                 source_address=(src_ip, 0))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def raft_addr(nd):
    return "127.0.0.1:%d" % nd.raft_port


def handshake(nd, secret, my_id, my_addr, src_ip="127.0.0.1", response=None):
    """Speaks raftns's handshake to nd as my_id; returns (socket, hello bytes, response bytes).
    Raises Closed when the node hangs up; the caller decides what that means."""
    s = dial(nd, src_ip)
    cnonce = os.urandom(32)
    h = hello(my_id, my_addr, nd.id, cnonce)
    send_all(s, h)
    head = recv_exact(s, 80, T(5.0))
    if head[:4] != b"RNSC" or struct.unpack(">H", head[4:6])[0] != 1:
        raise AssertionError("bad CHALLENGE head %r" % head[:8])
    alen = struct.unpack(">H", head[6:8])[0]
    laddr = recv_exact(s, alen, T(5.0))
    lid = struct.unpack(">Q", head[8:16])[0]
    lnonce, lmac = head[16:48], head[48:80]
    if lid != nd.id or laddr.decode() != raft_addr(nd):
        raise AssertionError("listener says id %d at %r" % (lid, laddr))
    want = transcript_mac(secret, b"raftns-server", my_id, lid, my_addr.encode(), laddr, cnonce,
                          lnonce)
    if secret == SECRET and not hmac.compare_digest(want, lmac):
        raise AssertionError("listener MAC does not verify with the right secret")
    if response is None:
        mac = transcript_mac(secret, b"raftns-client", my_id, lid, my_addr.encode(), laddr,
                             cnonce, lnonce)
        response = b"RNSR" + be16(1) + be16(0) + mac
    send_all(s, response)
    return s, h, response


# --- the clusters ----------------------------------------------------------------------------------

class RaftPortAttacks:
    """Mixed into a TestCase with N nodes; the cluster lives for the whole class."""

    N = 3

    @classmethod
    def setUpClass(cls):
        why = clusterh.config_unsupported()
        if why:
            raise unittest.SkipTest(why)
        del harness.TEST_NODES[:]
        # Long election timeout, scaled: the leader must not change on a busy machine either.
        cls.cluster = clusterh.Cluster(cls.N, election_ms=int(T(2.0) * 1000), heartbeat_ms=100)
        for nd in cls.cluster.all():
            nd.extra_args += NO_CHECKPOINTS
        try:
            cls.cluster.start()
            leader = cls.cluster.leader()
            r = leader.request(ns.PUT_KV_CONFIG, {"namespace": "sec", "key": "k", "value": "v1"})
            if r.code != 0:
                raise AssertionError("seed KV put: %r" % r)
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
        """What no attack may change, per node."""
        out = {}
        for nd in cls.cluster.all():
            st = nd.status()
            with nd.conn(timeout=T(3.0)) as c:
                kv = c.request(ns.GET_KV_CONFIG, {"namespace": "sec", "key": "k"}, timeout=T(3.0))
                r106 = c.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(3.0))
            out[nd.id] = {k: st.get(k) for k in ("role", "term", "commit_index", "applied_index",
                                                  "digest", "diverged", "ready")}
            out[nd.id]["leader"] = clusterh.leader_id_of(st)
            out[nd.id]["kv"] = (kv.code, (kv.ext or {}).get("value"))
            out[nd.id]["106"] = (r106.code, r106.body)
        return out

    def assert_unchanged(self, what):
        for nd in self.cluster.all():
            self.assertTrue(nd.alive(), "node %d died after %s\n%s" % (nd.id, what,
                                                                       nd.log_tail()))
            nd.assert_clean_log()
        # No consistent read here: its barrier would itself move the commit index. A forged
        # message that reached libraft would have been handled in the loop turns it takes a
        # node to answer the /status and client requests that state() makes.
        self.assertEqual(self.state(), self.baseline, "state changed after %s" % what)

    def assert_closed(self, sock, what, timeout=None):
        timeout = timeout or T(5.0)
        try:
            self.assertTrue(closed_within(sock, timeout), harness.expired(
                "%s closed by the node" % what, timeout, "still open"))
        finally:
            sock.close()

    def attack_each(self, what, fn):
        """Runs fn(target node) against every node, then checks nothing changed."""
        for nd in self.cluster.all():
            fn(nd)
        self.assert_unchanged(what)

    def other(self, nd):
        """A member id other than nd's (nd itself in a 1-node cluster)."""
        ids = [x.id for x in self.cluster.all() if x.id != nd.id]
        return self.cluster[ids[0]] if ids else nd

    # -- without the secret ------------------------------------------------------------------------

    def test_libraft_handshake_and_forged_append_entries(self):
        def fn(nd):
            s = dial(nd)
            send_all(s, legacy_handshake(self.other(nd).id, raft_addr(self.other(nd))) +
                     append_entries(1000, [(1000, COMMAND, forged_command())], commit=1 << 20))
            self.assert_closed(s, "libraft handshake + AppendEntries")
        self.attack_each("a libraft handshake and a forged AppendEntries", fn)

    def test_libraft_crash_packets(self):
        packets = {
            "2^32-1 entries": append_entries(7, [(7, COMMAND, b"\0" * 8)], n=(1 << 32) - 1),
            "1 GiB header length": message(AE, b"\0" * 64, header_len=1 << 30),
            "1-byte vote header": message(RV, b"\xff"),
        }
        for what, pkt in packets.items():
            def fn(nd, pkt=pkt, what=what):
                s = dial(nd)
                send_all(s, legacy_handshake(self.other(nd).id, raft_addr(self.other(nd))) + pkt)
                self.assert_closed(s, what)
            self.attack_each(what, fn)

    def test_unterminated_and_huge_handshake_address(self):
        def fn(nd):
            for pkt in (legacy_handshake(2, "A" * 300, announced=1 << 30, terminate=False),
                        legacy_handshake(2, "A" * 64, announced=64, terminate=False),
                        b"RNSH" + be16(1) + be16(0xffff) + b"\0" * 48 + b"A" * 200):
                s = dial(nd)
                send_all(s, pkt)
                self.assert_closed(s, "handshake address")
        self.attack_each("unterminated/huge handshake addresses", fn)

    def test_garbage(self):
        def fn(nd):
            for pkt in (os.urandom(4096), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"\0" * 200):
                s = dial(nd)
                send_all(s, pkt)
                self.assert_closed(s, "garbage")
        self.attack_each("garbage", fn)

    def test_silent_connection_times_out(self):
        def fn(nd):
            s = dial(nd)
            self.assert_closed(s, "a silent connection", timeout=T(6.0))
        self.attack_each("a silent connection", fn)

    def test_unauthenticated_flood_from_one_ip(self):
        """40 silent connections from one address: all but a few are closed at once (the cap
        per source IP), and a member from another address still gets its CHALLENGE."""
        def fn(nd):
            flood = [dial(nd, "127.0.0.3") for _ in range(40)]
            try:
                cut = sum(closed_within(s, T(0.3)) for s in flood)
                self.assertGreaterEqual(cut, 30, "only %d of 40 cut at once" % cut)
                peer = self.other(nd)
                s, _, _ = handshake(nd, SECRET, 99 if peer.id == nd.id else peer.id,
                                    raft_addr(peer))
                s.close()
            finally:
                for s in flood:
                    s.close()
        self.attack_each("a flood of unauthenticated connections", fn)

    def test_wrong_mac(self):
        def fn(nd):
            peer = self.other(nd)
            try:
                s, _, _ = handshake(nd, b"not-the-secret", peer.id, raft_addr(peer))
            except Closed:
                return
            send_all(s, append_entries(1000, [(1000, COMMAND, forged_command())]))
            self.assert_closed(s, "a handshake with a wrong MAC")
        self.attack_each("a handshake with a wrong MAC", fn)

    def test_replayed_handshake(self):
        """A recorded handshake (HELLO and RESPONSE bytes) does not authenticate a new
        connection: the listener's nonce is fresh."""
        def fn(nd):
            peer = self.other(nd)
            if peer.id == nd.id:
                my_id, my_addr = 99, "127.0.0.1:1"  # refused later; the bytes still record
            else:
                my_id, my_addr = peer.id, raft_addr(peer)
            try:
                s, h, resp = handshake(nd, SECRET, my_id, my_addr)
                s.close()
            except Closed:
                self.fail("a correct handshake was refused before its RESPONSE")
            s = dial(nd)
            send_all(s, h + resp + append_entries(1000, [(1000, COMMAND, forged_command())]))
            self.assert_closed(s, "a replayed handshake")
        self.attack_each("a replayed handshake", fn)

    # -- knowing the secret (a compromised peer) ----------------------------------------------------

    def test_secret_with_id_not_in_configuration(self):
        def fn(nd):
            try:
                s, _, _ = handshake(nd, SECRET, 99, "127.0.0.1:1")
            except Closed:
                return
            send_all(s, append_entries(1000, [(1000, COMMAND, forged_command())]) +
                     request_vote(1000, 99))
            self.assert_closed(s, "an id not in the configuration")
        self.attack_each("an authenticated id not in the configuration", fn)

    def test_secret_with_own_id(self):
        def fn(nd):
            try:
                s, _, _ = handshake(nd, SECRET, nd.id, raft_addr(nd))
            except Closed:
                return
            send_all(s, append_entries(1000, [(1000, COMMAND, forged_command())]))
            self.assert_closed(s, "the node's own id")
        self.attack_each("an authenticated peer claiming the node's own id", fn)

    def test_secret_member_id_from_other_ip(self):
        """A holder of the secret on another host (127.0.0.2) posing as a member: an
        AppendEntries with a higher term and forged entries, then a RequestVote."""
        def fn(nd):
            peer = self.other(nd)
            try:
                s, _, _ = handshake(nd, SECRET, peer.id, raft_addr(peer), src_ip="127.0.0.2")
            except Closed:
                return
            send_all(s, append_entries(1000, [(1000, COMMAND, forged_command())], commit=1 << 20)
                     + request_vote(1001, peer.id))
            self.assert_closed(s, "a member id from another source IP")
        self.attack_each("a member id from another source IP", fn)

    def checker_attack(self, what, pkt):
        """Posing as a member from its own host (indistinguishable on the wire): the message
        checker must close the connection before libraft decodes pkt."""
        if self.N == 1:
            self.skipTest("a 1-node cluster has no other member to pose as")

        def fn(nd):
            peer = self.other(nd)
            s, _, _ = handshake(nd, SECRET, peer.id, raft_addr(peer))
            send_all(s, pkt(peer))
            self.assert_closed(s, what)
        self.attack_each(what, fn)

    def test_secret_entries_not_multiple_of_8(self):
        self.checker_attack("entries of length 13", lambda p: append_entries(
            1000, [(1000, COMMAND, b"\0\0\0\x09" + b"x" * 9)], commit=1 << 20))

    def test_secret_huge_counts_and_lengths(self):
        self.checker_attack("2^32-1 entries", lambda p: append_entries(
            1000, [(1000, COMMAND, b"\0" * 8)], n=(1 << 32) - 1))
        self.checker_attack("1 GiB header", lambda p: message(AE, b"\0" * 64, header_len=1 << 30))
        self.checker_attack("1-byte vote header", lambda p: message(RV, b"\xff"))
        self.checker_attack("entry type 9", lambda p: append_entries(
            1000, [(1000, 9, b"\0" * 8)]))

    def test_secret_request_vote_for_another_candidate(self):
        def pkt(peer):
            others = [x.id for x in self.cluster.all() if x.id != peer.id]
            return request_vote(1000, others[-1] if others else 42, flags=1)
        self.checker_attack("a RequestVote for another candidate", pkt)

    def test_secret_snapshot_unterminated_conf_address(self):
        def pkt(peer):
            conf = b"\x01" + le64(1) + le64(peer.id) + b"A" * 23  # no NUL, no role
            h = le64(1000) + le64(1 << 20) + le64(1000) + le64(1) + le64(len(conf)) + conf + \
                le64(8) + le64(0)
            return message(IS, h, b"\0" * 8)
        self.checker_attack("an InstallSnapshot with an unterminated address", pkt)

    # -- the legitimate path still works ------------------------------------------------------------

    def test_zz_cluster_still_writes(self):
        """Runs last (name order): after all attacks a write still commits everywhere."""
        leader = self.cluster.leader()
        r = leader.request(ns.PUT_KV_CONFIG, {"namespace": "sec", "key": "after", "value": "ok"})
        self.assertEqual(r.code, 0, r)
        for nd in self.cluster.all():
            wait_until(lambda nd=nd: (nd.request(ns.GET_KV_CONFIG, {
                "namespace": "sec", "key": "after"}).ext or {}).get("value") == "ok", T(10.0),
                "the write on node %d" % nd.id)
        self.cluster.wait_converged()
        type(self).baseline = self.state()
        # Every node counted the attacks it refused or cut.
        for nd in self.cluster.all():
            code, body = nd.http_get("/metrics")
            self.assertEqual(code, 200)
            m = dict(line.split(" ", 1) for line in body.decode().splitlines()
                     if line.startswith("raftns_peer_"))
            self.assertGreater(int(m["raftns_peer_refused_total"]), 5, m)
            if self.N > 1:
                self.assertGreater(int(m["raftns_peer_violations_total"]), 3, m)
                self.assertGreater(int(m["raftns_peer_accepted_total"]), 0, m)


class ThreeNodes(RaftPortAttacks, unittest.TestCase):
    N = 3


class OneNode(RaftPortAttacks, unittest.TestCase):
    N = 1


if __name__ == "__main__":
    harness.main()
