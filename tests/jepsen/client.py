"""Client side of the fault suite: one operation against one node with a verdict. A request that
could not be sent is "fail" (it had no effect), a write that was sent but got no reply or an error
reply is "info" (it may or may not take effect), a read that got no good reply is "fail" (reads
have no effect). It builds on tests/process/nsclient.py for the wire and adds no retries."""

import hashlib
import os
import socket
import sys

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "process"))
import nsclient as ns  # noqa: E402

CONNECT_TIMEOUT = 1.0
REPLY_TIMEOUT = 6.0  # > the server's 3 s no-leader bound
KV_NAMESPACE = "jepsen"
QUERY_NOT_FOUND = 22


SERVED_BY = "raftnsServedBy"


class Result:
    """type: ok | fail | info; value: what a read saw; error: text for fail/info; served_by: the
    reply's raftnsServedBy ext field (the node whose state answered a read this node forwarded,
    docs/readiness.md), None when the node answered from its own state."""

    def __init__(self, type_, value=None, error=None, served_by=None):
        self.type = type_
        self.value = value
        self.error = error
        self.served_by = served_by


def connect(addr):
    """A Conn, or None when the TCP connection could not be made (nothing was sent)."""
    try:
        c = ns.Conn(addr, timeout=CONNECT_TIMEOUT)
        c.sock.settimeout(REPLY_TIMEOUT)
        return c
    except OSError:
        return None


def call(conn, code, ext=None, body=b"", write=True, timeout=REPLY_TIMEOUT):
    """(Result, reply or None). conn is closed on transport errors (caller must drop it)."""
    try:
        r = conn.request(code, ext, body, timeout=timeout)
    except (TimeoutError, socket.timeout) as e:
        conn.close()
        return Result("info" if write else "fail", error="timeout: %s" % e), None
    except (ns.ConnectionClosed, OSError, ns.ProtocolError) as e:
        conn.close()
        return Result("info" if write else "fail", error="transport: %s" % e), None
    served_by = (r.ext or {}).get(SERVED_BY)
    if r.code == 0:
        return Result("ok", served_by=served_by), r
    return Result("info" if write else "fail",
                  error="code %d: %s" % (r.code, r.remark), served_by=served_by), r


def once(addr, code, ext=None, body=b"", write=True):
    conn = connect(addr)
    if conn is None:
        return Result("fail", error="connect failed"), None
    try:
        return call(conn, code, ext, body, write)
    finally:
        conn.close()


def kv_put(addr, key, value):
    res, _ = once(addr, ns.PUT_KV_CONFIG,
                  {"namespace": KV_NAMESPACE, "key": key, "value": str(value)})
    return res


def kv_delete(addr, key):
    res, _ = once(addr, ns.DELETE_KV_CONFIG, {"namespace": KV_NAMESPACE, "key": key})
    return res


def kv_get(addr, key):
    """Consistent read; value None = key absent."""
    res, r = once(addr, ns.GET_KV_CONFIG, {"namespace": KV_NAMESPACE, "key": key,
                                           "raftnsConsistent": "true"}, write=False)
    if r is not None and r.code == QUERY_NOT_FOUND:
        return Result("ok", value=None, served_by=res.served_by)
    if res.type == "ok":
        ext = r.ext or {}
        res.value = ext.get("value")
    return res


def cluster_info(addr, consistent=False):
    """Result whose value is the sorted list of broker names in 106's brokerAddrTable, with
    the set of broker addresses (value['addrs'])."""
    ext = {"raftnsConsistent": "true"} if consistent else None
    res, r = once(addr, ns.GET_BROKER_CLUSTER_INFO, ext, write=False)
    if res.type != "ok":
        return res
    try:
        body = ns.loads_tolerant(r.body) if r.body else {}
    except ValueError as e:
        return Result("fail", error="bad 106 body: %s" % e, served_by=res.served_by)
    table = body.get("brokerAddrTable") or {}
    res.value = sorted(table.keys())
    return res


def table_bodies(addr):
    """(106 body, 206 body) raw bytes, or None when the node did not answer both."""
    conn = connect(addr)
    if conn is None:
        return None
    try:
        out = []
        for code in (ns.GET_BROKER_CLUSTER_INFO, ns.GET_ALL_TOPIC_LIST):
            res, r = call(conn, code, write=False, timeout=2.0)
            if res.type != "ok":
                return None
            out.append(r.body)
        return tuple(out)
    finally:
        conn.close()


class Broker:
    """A simulated broker: one persistent connection per node (like a real broker), registering
    over the connection of a node picked by the caller."""

    def __init__(self, name, addr, cluster_name="jepsen", timeout_ms=None):
        self.name = name
        self.addr = addr
        self.cluster_name = cluster_name
        self.timeout_ms = timeout_ms
        self.conns = {}
        # two topics: a new broker registering exactly one topic trips Java's single-topic guard
        # ("register broker failed", docs/protocol.md §5.2), which raftns reproduces
        self.body = ns.register_body(["jt-" + name, "jt2-" + name])

    def _conn(self, node_addr):
        c = self.conns.get(node_addr)
        if c is None or c.eof:
            c = connect(node_addr)
            if c is None:
                return None
            self.conns[node_addr] = c
        return c

    def _send(self, node_addr, code, ext, body=b""):
        c = self._conn(node_addr)
        if c is None:
            return Result("fail", error="connect failed")
        res, _ = call(c, code, ext, body, write=True)
        if res.type != "ok" and res.error and not res.error.startswith("code"):
            self.conns.pop(node_addr, None)
        return res

    def register(self, node_addr):
        ext = ns.register_ext(name=self.name, broker_id=0, addr=self.addr, ha=self.addr,
                              cluster=self.cluster_name, body=self.body,
                              timeout_ms=self.timeout_ms)
        return self._send(node_addr, ns.REGISTER_BROKER, ext, self.body)

    def unregister(self, node_addr):
        ext = {"brokerName": self.name, "brokerAddr": self.addr,
               "clusterName": self.cluster_name, "brokerId": "0"}
        return self._send(node_addr, ns.UNREGISTER_BROKER, ext)

    def close(self):
        for c in self.conns.values():
            c.close()
        self.conns = {}


def table_set(addr, topics, kv_keys, timeout=2.0):
    """{table name: "code:body-sha256"} of one node's every table, by plain local reads: 106,
    206, 224 of the jepsen cluster, 105 of every topic given, 219 of the kv namespace and 101 of
    every kv key (its value). None when the node did not answer. Replies carry no node-specific
    bytes in their bodies, so equal states give equal strings."""
    conn = connect(addr)
    if conn is None:
        return None
    reqs = [("106", ns.GET_BROKER_CLUSTER_INFO, None),
            ("206", ns.GET_ALL_TOPIC_LIST, None),
            ("224", ns.GET_TOPICS_BY_CLUSTER, {"cluster": "jepsen"}),
            ("219", ns.GET_KVLIST_BY_NAMESPACE, {"namespace": KV_NAMESPACE})]
    reqs += [("105:" + t, ns.GET_ROUTEINFO_BY_TOPIC, {"topic": t}) for t in sorted(topics)]
    reqs += [("101:" + k, ns.GET_KV_CONFIG, {"namespace": KV_NAMESPACE, "key": k})
             for k in sorted(kv_keys)]
    out = {}
    try:
        for name, code, ext in reqs:
            try:
                r = conn.request(code, ext, b"", timeout=timeout)
            except (TimeoutError, socket.timeout, ns.ConnectionClosed, OSError,
                    ns.ProtocolError):
                return None
            extra = (r.ext or {}).get("value", "") if code == ns.GET_KV_CONFIG else ""
            out[name] = "%d:%s" % (r.code, hashlib.sha256(
                (r.body or b"") + b"\0" + extra.encode()).hexdigest()[:16])
            if name == "206" and r.code == 0:
                out["_topics"] = sorted(ns.loads_tolerant(r.body).get("topicList") or [])
        return out
    finally:
        conn.close()
