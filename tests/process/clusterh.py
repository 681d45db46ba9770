"""Cluster process-test harness: runs a 3- or 5-node raftns cluster on 127.0.0.1 from a generated
--config file (free ports, fresh temp data dirs), starts, stops, kills (-9), pauses (SIGSTOP),
resumes and restarts nodes by id, finds the leader through each node's HTTP /status, and waits for
convergence (same applied index and digest on every live node and byte-identical 106/206 bodies).
Every PID and temp dir is cleaned up, node logs are printed for failed tests and scanned for
sanitizer reports. It builds on harness.py (one node) and nsclient.py (the wire); it does not
judge timing: deadlines are generous bounds, never measurements."""

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, wait_until  # noqa: E402

SYSTEM_ERROR = 1
TOPIC_NOT_EXIST = 17
ELECTION_MS = 1000  # the default; sanitizer builds are slower but keep it (deadlines scale)
CLUSTER_DIRS = []


def config_unsupported():
    """Why the binary cannot run a cluster (a reason string), or None when it can."""
    try:
        out = subprocess.run([harness.RAFTNS_BIN, "--help"], capture_output=True,
                             timeout=T(10))
    except (OSError, subprocess.TimeoutExpired):
        return None  # a missing binary is a failure, reported when a node starts
    text = (out.stdout + out.stderr).decode("utf-8", "replace")
    for line in text.splitlines():
        if "--config" in line and "not supported" in line:
            return "raftns says: " + line.strip()
    return None


class ClusterNode(harness.Node):
    """One member: its ports come from harness.Node, its argv from the cluster file."""

    def __init__(self, cluster, node_id, log_level):
        super().__init__(log_level=log_level)
        self.cluster = cluster
        self.id = node_id
        self.paused = False
        self.expect_dead = False  # killed -9 on purpose and not restarted since

    def __repr__(self):
        return "node%d(pid %s)" % (self.id, self.pid)

    @property
    def http_addr(self):
        return "127.0.0.1:%d" % self.http_port

    def entry(self, bootstrap=True):
        return {"id": self.id, "raft": "127.0.0.1:%d" % self.raft_port,
                "client": "127.0.0.1:%d" % self.client_port, "http": self.http_addr,
                "bootstrap": bootstrap}

    def argv(self):
        return [harness.RAFTNS_BIN, "--config", self.cluster.config_path, "--id", str(self.id),
                "--data-dir", self.data_dir, "--log-level", self.log_level] + self.extra_args

    def start(self, wait=False, timeout=None):
        self.expect_dead = False
        self.paused = False
        return super().start(wait=wait, timeout=timeout)

    def kill9(self):
        self.resume()
        if self.alive():
            self.expect_dead = True
        super().kill9()

    def pause(self):
        assert self.alive(), "%r is not running" % self
        os.kill(self.proc.pid, signal.SIGSTOP)
        self.paused = True

    def resume(self):
        if self.paused and self.alive():
            os.kill(self.proc.pid, signal.SIGCONT)
        self.paused = False

    def stop(self, timeout=None, check=True):
        self.resume()
        if self.expect_dead and not self.alive():
            if check:
                self.assert_clean_log()
            return self.proc.returncode
        return super().stop(timeout=timeout, check=check)

    def up(self):
        """Running and not paused: a node that should answer."""
        return self.alive() and not self.paused

    def status(self, timeout=None):
        """GET /status as a dict; raises OSError when the node does not answer."""
        url = "http://%s/status" % self.http_addr
        try:
            with urllib.request.urlopen(url, timeout=timeout or T(2.0)) as r:
                return json.loads(r.read().decode("utf-8"))
        except (urllib.error.URLError, ValueError, ConnectionError) as e:
            raise OSError("GET %s: %s" % (url, e)) from None

    def http_get(self, path, timeout=None):
        """(status code, body bytes) of GET path."""
        url = "http://%s%s" % (self.http_addr, path)
        try:
            with urllib.request.urlopen(url, timeout=timeout or T(2.0)) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def metric(self, name):
        """The value of the unlabelled sample name in /metrics, as an int."""
        code, body = self.http_get("/metrics")
        for line in body.decode().splitlines():
            if line.startswith(name + " "):
                return int(float(line.split()[1]))
        raise AssertionError("no %s in /metrics of node %d (HTTP %d)" % (name, self.id, code))

    def conn(self, timeout=None):
        return ns.Conn(self.addr, timeout=timeout or T(5.0), tls=self.tls)

    def request(self, code, ext=None, body=b"", timeout=None):
        with self.conn() as c:
            return c.request(code, ext, body, timeout=timeout or T(5.0))


def role_of(st):
    return str(st.get("role", "")).lower()


def leader_id_of(st):
    """The leader id a /status says it follows (accepts an int or {"id": n, ...})."""
    ld = st.get("leader")
    if isinstance(ld, dict):
        ld = ld.get("id")
    try:
        return int(ld) if ld is not None else 0
    except (TypeError, ValueError):
        return 0


class Cluster:
    """n nodes (ids 1..n) described by one config file in a temp dir."""

    def __init__(self, n=3, election_ms=ELECTION_MS, heartbeat_ms=50, snapshot_threshold=4096,
                 namesrv=None, log_level="info", secret="raftns-test-secret"):
        self.dir = tempfile.mkdtemp(prefix="raftns-cluster-")
        CLUSTER_DIRS.append(self.dir)
        self.config_path = os.path.join(self.dir, "cluster.json")
        self.election_ms = election_ms
        self.nodes = {i: ClusterNode(self, i, log_level) for i in range(1, n + 1)}
        ports = harness.free_ports(3 * n)  # one batch: distinct ports for every node
        for k, nd in enumerate(self.nodes.values()):
            nd.client_port, nd.raft_port, nd.http_port = ports[3 * k:3 * k + 3]
        self.config = {"secret": secret, "electionTimeoutMs": election_ms,
                       "heartbeatMs": heartbeat_ms, "snapshotThreshold": snapshot_threshold,
                       "nodes": [nd.entry() for nd in self.nodes.values()],
                       "namesrv": dict(namesrv or {})}
        with open(self.config_path, "w") as f:
            json.dump(self.config, f, indent=2)
        self.cleaned = False

    def __getitem__(self, node_id):
        return self.nodes[node_id]

    def all(self):
        return list(self.nodes.values())

    def live(self):
        return [nd for nd in self.nodes.values() if nd.up()]

    # -- lifecycle ------------------------------------------------------------------------

    def start(self, wait=True):
        for nd in self.nodes.values():
            nd.start(wait=False)
        if wait:
            self.wait_ready()
            self.leader()
        return self

    def wait_ready(self, nodes=None, timeout=None):
        for nd in nodes or self.live():
            nd.wait_ready(timeout or T(30.0))

    def restart(self, node_id, wait=True):
        nd = self.nodes[node_id]
        if nd.alive():
            nd.stop()
        nd.start(wait=wait, timeout=T(30.0))
        return nd

    def cleanup(self, check=True):
        if self.cleaned:
            return
        self.cleaned = True
        errs = []
        for nd in self.nodes.values():
            nd.resume()
        for nd in self.nodes.values():
            try:
                nd.cleanup(check=check)
            except AssertionError as e:
                errs.append("node %d: %s" % (nd.id, e))
        shutil.rmtree(self.dir, ignore_errors=True)
        if errs:
            raise AssertionError("\n".join(errs))

    # -- roles ----------------------------------------------------------------------------

    def statuses(self, nodes=None):
        """{node id: /status dict} of the given (default: live) nodes that answer."""
        out = {}
        for nd in nodes or self.live():
            try:
                out[nd.id] = nd.status()
            except OSError:
                pass
        return out

    def current_leader(self, nodes=None):
        """The node that reports role leader and that every other answering node follows, or
        None (no leader, or the nodes disagree)."""
        return self.leader_in(self.statuses(nodes))

    def leader_in(self, sts):
        """current_leader() of the {node id: /status} sts."""
        leaders = [i for i, st in sts.items() if role_of(st) == "leader"]
        if len(leaders) != 1:
            return None
        lid = leaders[0]
        if any(leader_id_of(st) != lid for i, st in sts.items() if i != lid):
            return None
        return self.nodes[lid]

    def leader(self, timeout=None, nodes=None, exclude=()):
        """Waits until the live nodes agree on one leader (not in exclude); returns it."""
        def pred():
            sts = self.statuses(nodes)
            ld = self.leader_in(sts)
            if ld is not None and ld.id not in exclude:
                return ld
            return harness.Seen({i: "%s, leader %d, term %s" % (role_of(st), leader_id_of(st),
                                                                st.get("term"))
                                 for i, st in sts.items()})
        what = "one leader all live nodes agree on"
        return wait_until(pred, timeout or T(20.0),
                          what + (" (not node %s)" % list(exclude) if exclude else ""))

    def followers(self, leader=None):
        leader = leader or self.leader()
        return [nd for nd in self.live() if nd.id != leader.id]

    # -- convergence ----------------------------------------------------------------------

    def fingerprint(self, nd):
        """What must be identical on converged nodes: applied index, digest, 106 and 206."""
        st = nd.status()
        with nd.conn(timeout=T(3.0)) as c:
            r106 = c.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(3.0))
            r206 = c.request(ns.GET_ALL_TOPIC_LIST, timeout=T(3.0))
        return {"applied_index": st.get("applied_index"), "digest": st.get("digest"),
                "ready": st.get("ready"), "diverged": st.get("diverged"),
                "106": (r106.code, r106.body), "206": (r206.code, r206.body)}

    def converged(self, nodes=None):
        """None when the given (default: live) nodes agree, else a description of the diff."""
        nodes = nodes or self.live()
        fps = {}
        for nd in nodes:
            try:
                fps[nd.id] = self.fingerprint(nd)
            except (OSError, ns.ConnectionClosed, ns.ProtocolError, TimeoutError) as e:
                return "node %d does not answer: %s" % (nd.id, e)
        first = next(iter(fps.values()))
        for i, fp in fps.items():
            if fp["ready"] is False or fp["diverged"] is True or fp["106"][0] != 0:
                return "node %d not serving: %r" % (i, fp)
        diffs = [k for k in first if any(fp[k] != first[k] for fp in fps.values())]
        if diffs:
            return "differ in %s: %s" % (diffs, {i: {k: fp[k] for k in diffs}
                                                 for i, fp in fps.items()})
        return None

    def wait_converged(self, nodes=None, timeout=None):
        """Polls until every given (default: live) node agrees; AssertionError with the last
        difference at the deadline."""
        timeout = timeout or T(30.0)
        deadline = time.monotonic() + timeout
        while True:
            diff = self.converged(nodes)
            if diff is None:
                return
            if time.monotonic() >= deadline:
                raise AssertionError(harness.expired("cluster converged (same applied index, "
                                                     "digest, 106 and 206)", timeout, diff))
            time.sleep(0.1)


# -- a broker with connections to several nodes ---------------------------------------------

class Broker:
    """A fake broker: one connection per node it talks to (closing them is how a dead broker
    looks). Give it two or more topics: a 5.x name server refuses a first registration that
    carries exactly one (docs/protocol.md §5.2 step 7)."""

    def __init__(self, name="broker-a", addr="127.0.0.1:10911", cluster="c1",
                 topics=("TopicA", "TopicB"),
                 timeout_ms=None):
        self.name, self.addr, self.cluster = name, addr, cluster
        self.ha = addr.rsplit(":", 1)[0] + ":%d" % (int(addr.rsplit(":", 1)[1]) + 1)
        self.topics = list(topics)
        self.counter = 1
        self.timeout_ms = timeout_ms
        self.conns = {}  # node id -> ns.Conn

    def conn(self, nd):
        c = self.conns.get(nd.id)
        if c is None or c.eof:
            c = self.conns[nd.id] = nd.conn(timeout=T(5.0))
        return c

    def drop(self, nd):
        c = self.conns.pop(nd.id, None)
        if c:
            c.close()

    def close(self):
        for c in self.conns.values():
            c.close()
        self.conns.clear()

    def dv(self):
        return ns.data_version(self.counter)

    def body(self):
        return ns.register_body(self.topics, self.dv())

    def ext(self, body):
        return ns.register_ext(self.name, 0, self.addr, self.ha, self.cluster, body,
                               timeout_ms=self.timeout_ms)

    def register_request(self):
        body = self.body()
        return {"code": ns.REGISTER_BROKER, "ext": self.ext(body), "body": body}

    def register(self, nd, timeout=None):
        rq = self.register_request()
        return self.conn(nd).request(rq["code"], rq["ext"], rq["body"],
                                     timeout=timeout or T(10.0))

    def heartbeat_ext(self):
        return {"clusterName": self.cluster, "brokerAddr": self.addr, "brokerName": self.name,
                "brokerId": "0"}

    def heartbeat(self, nd, oneway=False):
        return self.conn(nd).request(ns.BROKER_HEARTBEAT, self.heartbeat_ext(), oneway=oneway,
                                     timeout=T(5.0))

    def query_request(self):
        return {"code": ns.QUERY_DATA_VERSION, "ext": self.heartbeat_ext(),
                "body": ns.dumps_java(self.dv()).encode()}


def route(nd, topic, consistent=False):
    ext = {"topic": topic}
    if consistent:
        ext["raftnsConsistent"] = "true"
    return nd.request(ns.GET_ROUTEINFO_BY_TOPIC, ext)


def broker_names(reply):
    if reply.code != 0:
        return []
    return sorted(bd["brokerName"] for bd in reply.body_json().get("brokerDatas", []))


def cluster_brokers(nd):
    """Broker names in GET_BROKER_CLUSTER_INFO of nd."""
    r = nd.request(ns.GET_BROKER_CLUSTER_INFO)
    if r.code != 0:
        raise AssertionError("106 on node %d: %r" % (nd.id, r))
    return sorted(r.body_json().get("brokerAddrTable", {}).keys())


def write_until_acked(broker, nd, timeout=None):
    """Registers broker (a changed DataVersion) through nd until the reply is 0; returns the
    number of attempts. A SYSTEM_ERROR, a closed connection or a timeout is retried."""
    timeout = timeout or T(20.0)
    deadline = time.monotonic() + timeout
    attempts, last = 0, None
    while time.monotonic() < deadline:
        attempts += 1
        try:
            r = broker.register(nd, timeout=T(5.0))
            if r.code == 0:
                return attempts
            last = r
        except (OSError, ns.ConnectionClosed, TimeoutError) as e:
            broker.drop(nd)
            last = e
        time.sleep(0.02)
    raise AssertionError(harness.expired("a write acknowledged by node %d (%d attempts)" %
                                         (nd.id, attempts), timeout, last))


class ClusterTestCase(unittest.TestCase):
    """Starts a fresh cluster per test (class attributes tune it) and always cleans it up."""

    NODES = 3
    ELECTION_MS = ELECTION_MS
    NAMESRV = {}
    EXTRA_ARGS = ()  # appended to every node's argv (e.g. --checkpoint-entries N)

    @classmethod
    def setUpClass(cls):
        why = config_unsupported()
        if why:
            raise unittest.SkipTest(why)

    def setUp(self):
        del harness.TEST_NODES[:]
        self.brokers = []
        self.cluster = Cluster(self.NODES, election_ms=self.ELECTION_MS, namesrv=self.NAMESRV)
        for nd in self.cluster.all():
            nd.extra_args += list(self.EXTRA_ARGS)
        self.cluster.start()

    def tearDown(self):
        for b in self.brokers:
            b.close()
        self.cluster.cleanup(check=True)

    def broker(self, **kw):
        b = Broker(**kw)
        self.brokers.append(b)
        return b


def _cleanup_dirs():
    for d in CLUSTER_DIRS:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_cleanup_dirs)
main = harness.main
