"""The fault suite's cluster: raftns nodes, each started inside its own network namespace from a
generated cluster file, killed (-9), paused (SIGSTOP), resumed and restarted by id; /status polling
from the client namespace; the post-heal convergence check and the log scan. One node may run under
libfaketime so its clock can be jumped. It does not choose faults (nemesis.py) nor issue client
operations (workloads.py)."""

import json
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import client

CLIENT_PORT, RAFT_PORT, HTTP_PORT = 9876, 9886, 9896
CHECKPOINT_ENTRIES, CHECKPOINT_MS = 50, 2000
PDEATH = (["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else [])
# "STATE DIVERGED": a majority verdict found this node's state different (docs/divergence.md);
# the node recovers by itself, but in a correct build it never happens, so it is a bug.
LOG_MARKERS = ("AddressSanitizer", "runtime error", "Assertion", "SIGSEGV", "out of memory",
               "aborting", "STATE DIVERGED")
# The shared test deadline scale (common contract: RAFTNS_TEST_SCALE, x3 for sanitizer builds);
# tests/process/harness.py cannot be imported here (same module name), so it is read the same way.
SCALE = (float(os.environ.get("RAFTNS_TEST_SCALE") or 1) *
         (3.0 if os.environ.get("RAFTNS_SANITIZE", "").upper() in ("ON", "1", "TRUE", "YES")
          else 1.0))


def T(seconds):
    """A harness deadline scaled for a loaded machine or a sanitizer build."""
    return seconds * SCALE


FAKETIME_LIBS = ("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                 "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
                 "/usr/lib/faketime/libfaketime.so.1")


def faketime_lib():
    for p in FAKETIME_LIBS:
        if os.path.exists(p):
            return p
    return None


class Node:
    def __init__(self, cluster, node_id, bootstrap):
        self.cluster = cluster
        self.id = node_id
        self.bootstrap = bootstrap
        self.ip = cluster.net.node_ip(node_id)
        self.data_dir = os.path.join(cluster.run_dir, "data", "n%d" % node_id)
        self.log_path = os.path.join(cluster.run_dir, "logs", "n%d.log" % node_id)
        self.proc = None
        self.paused = False
        # why the current process may exit ("nemesis-kill", "stop", ...); None = it must not
        self.expect_exit = None
        self.exit_reported = True
        self.faketime_file = None  # set when this node runs under libfaketime
        os.makedirs(self.data_dir, exist_ok=True)

    def __repr__(self):
        return "n%d" % self.id

    @property
    def client_addr(self):
        return "%s:%d" % (self.ip, CLIENT_PORT)

    @property
    def http_addr(self):
        return "%s:%d" % (self.ip, HTTP_PORT)

    def entry(self):
        return {"id": self.id, "raft": "%s:%d" % (self.ip, RAFT_PORT),
                "client": self.client_addr, "http": self.http_addr,
                "bootstrap": self.bootstrap}

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def up(self):
        return self.alive() and not self.paused

    def start(self):
        assert not self.alive()
        self.cluster.reap(self)  # the previous process's exit is recorded before it is replaced
        env = dict(os.environ)
        if self.faketime_file:
            env["LD_PRELOAD"] = faketime_lib()
            env["FAKETIME_TIMESTAMP_FILE"] = self.faketime_file
            env["FAKETIME_CACHE_DURATION"] = "1"
            env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
            env["FAKETIME_DONT_RESET"] = "1"
            env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
                                   ).lstrip(":")
        # SIGKILLed with the runner (kernel parent-death signal), so a killed run leaves no node
        argv = PDEATH + ["ip", "netns", "exec", self.cluster.net.node_ns(self.id), self.cluster.bin,
                "--id", str(self.id), "--data-dir", self.data_dir, "--log-level", "info",
                # frequent checkpoints so /status digests are compared during the run
                "--checkpoint-entries", str(CHECKPOINT_ENTRIES),
                "--checkpoint-ms", str(CHECKPOINT_MS)]
        if self.cluster.single:  # development mode for servers without --config
            e = self.entry()
            argv += ["--client-addr", e["client"], "--raft-addr", e["raft"],
                     "--http-addr", e["http"]]
        else:
            argv += ["--config", self.cluster.config_for(self)]
        log = open(self.log_path, "ab")
        log.write(("\n=== jepsen: start n%d at %.3f: %s\n" % (
            self.id, time.monotonic(), " ".join(argv))).encode())
        log.flush()
        # taken before the process exists: the checker's cut-off for what a restarted node must
        # show once it answers reads itself (README check 1), so it may not be later than the start
        spawn_time = time.monotonic_ns()
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                     stdin=subprocess.DEVNULL)
        log.close()
        self.paused = False
        self.expect_exit = None
        self.exit_reported = False
        self.cluster.record("node-start", {"node": "n%d" % self.id, "pid": self.proc.pid,
                                           "spawn_time": spawn_time})

    def signal(self, sig):
        if self.alive():
            try:
                os.kill(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def kill9(self, why="harness-kill"):
        if self.alive() and self.expect_exit is None:
            self.expect_exit = why
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        if self.proc is not None:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        self.paused = False
        self.cluster.reap(self)

    def pause(self):
        self.signal(signal.SIGSTOP)
        self.paused = True

    def resume(self):
        self.signal(signal.SIGCONT)
        self.paused = False

    def stop(self, why="stop"):
        """SIGTERM, then SIGKILL after 10 s (scaled): an exit status other than 0 is recorded
        as unexpected (a crash while stopping, or a node that did not stop in time)."""
        self.resume()
        if not self.alive():
            self.cluster.reap(self)
            return
        if self.expect_exit is None:
            self.expect_exit = why
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(T(10))
        except subprocess.TimeoutExpired:
            self.expect_exit = why + "-timeout"
            self.kill9()
        self.cluster.reap(self)

    def status(self, timeout=1.0):
        url = "http://%s/status" % self.http_addr
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r:
                return json.loads(r.read().decode("utf-8"))
        except (urllib.error.URLError, ValueError, ConnectionError, OSError) as e:
            raise OSError("GET %s: %s" % (url, e)) from None

    def set_clock_offset(self, spec):
        """Writes a libfaketime spec like '+30s' or '+0' to this node's timestamp file."""
        with open(self.faketime_file + ".tmp", "w") as f:
            f.write(spec + "\n")
        os.replace(self.faketime_file + ".tmp", self.faketime_file)


class Cluster:
    def __init__(self, net, bin_path, run_dir, n_nodes, spares=0, faketime_node=None,
                 election_ms=1000, log=print, single=False, namesrv=None):
        self.single = single
        self.net = net
        self.bin = bin_path
        self.run_dir = run_dir
        self.log = log
        self.election_ms = election_ms
        os.makedirs(os.path.join(run_dir, "logs"), exist_ok=True)
        self.nodes = {}
        for i in range(1, n_nodes + spares + 1):
            self.nodes[i] = Node(self, i, bootstrap=i <= n_nodes)
        self.members = set(range(1, n_nodes + 1))  # ids currently meant to be voters
        if faketime_node is not None and faketime_lib():
            nd = self.nodes[faketime_node]
            nd.faketime_file = os.path.join(run_dir, "faketime-n%d" % faketime_node)
            nd.set_clock_offset("+0")
        self.rec = None  # workloads.Recorder: node starts and exits go into the history
        self.reap_lock = threading.Lock()
        self.config_path = os.path.join(run_dir, "cluster.json")
        cfg = {"secret": "jepsen-cluster-secret-0123456789", "electionTimeoutMs": election_ms, "heartbeatMs": 50,
               "snapshotThreshold": 4096,
               "nodes": [nd.entry() for nd in self.nodes.values()]}
        if namesrv:  # e.g. the controller workload's settings (workload_controller.SETTINGS)
            cfg["namesrv"] = dict(namesrv)
        with open(self.config_path, "w") as f:
            json.dump(cfg, f, indent=1)

    def config_for(self, nd):
        """The shared cluster file, or for a node that rejoins after a wipe (bootstrap off) a
        copy listing it without bootstrap, so it starts empty and waits for `member add`
        (cluster-configs/README.md) instead of bootstrapping the initial voter set again."""
        if nd.bootstrap:
            return self.config_path
        with open(self.config_path) as f:
            cfg = json.load(f)
        for ent in cfg["nodes"]:
            if ent["id"] == nd.id:
                ent["bootstrap"] = False
        path = os.path.join(self.run_dir, "cluster-n%d.json" % nd.id)
        with open(path, "w") as f:
            json.dump(cfg, f, indent=1)
        return path

    def member_nodes(self):
        return [self.nodes[i] for i in sorted(self.members)]

    def record(self, f, value):
        if self.rec is not None:
            self.rec.info("harness", f, value)

    def reap(self, nd):
        """Records the exit of nd's process once, when it has exited: status (negative = the
        signal), and what the harness expected (None = nothing should have stopped it).
        Expected: 0 after "stop", -9 after a kill; anything else is the node's own doing."""
        with self.reap_lock:
            if nd.proc is None or nd.exit_reported:
                return
            rc = nd.proc.poll()
            if rc is None:
                return
            nd.exit_reported = True
            why = nd.expect_exit
            want = {"stop": 0, "member-stop": 0}.get(why, -signal.SIGKILL)
            self.record("exit", {"node": "n%d" % nd.id, "pid": nd.proc.pid, "rc": rc,
                                 "cause": why,
                                 "expected": why is not None and not why.endswith("-timeout")
                                 and rc == want})
            if why is None or rc != want:
                self.log("n%d exited with status %d (%s)" % (
                    nd.id, rc, "expected %s" % why if why else "nothing stopped it"))

    def reap_all(self):
        for nd in self.nodes.values():
            self.reap(nd)

    def watch_exits(self, stop_ev):
        """Thread body: records every exit within 0.1 s, so a node that dies by itself is
        noticed even when the heal restarts it."""
        while not stop_ev.wait(0.1):
            self.reap_all()

    def start_all(self):
        for nd in self.member_nodes():
            nd.start()

    def stop_all(self):
        for nd in self.nodes.values():
            if nd.alive():
                nd.stop()

    def kill_all(self):
        for nd in self.nodes.values():
            nd.kill9("cleanup")

    def statuses(self, nodes=None):
        out = {}
        for nd in nodes or self.member_nodes():
            try:
                out[nd.id] = nd.status() if nd.up() else None
            except OSError:
                out[nd.id] = None
        return out

    def leader(self):
        """Id of the node that a majority-free view calls leader (a node saying it is leader)."""
        best = None
        for nid, st in self.statuses().items():
            if st and st.get("role") == "leader":
                if best is None or st.get("term", 0) > best[1]:
                    best = (nid, st.get("term", 0))
        return best[0] if best else None

    def wait_ready(self, timeout=30.0):
        deadline = time.monotonic() + T(timeout)
        while time.monotonic() < deadline:
            sts = self.statuses()
            if all(st and st.get("ready") for st in sts.values()) and self.leader():
                return True
            time.sleep(0.2)
        return False

    def restart_dead(self):
        """Resumes paused members and restarts dead ones; returns the ids restarted."""
        dead = []
        for nd in self.member_nodes():
            if nd.paused:
                nd.resume()
            if not nd.alive():
                nd.start()
                dead.append(nd.id)
        return dead

    def convergence(self, timeout=10.0):
        """Polls until every member reports the same digest at the same applied index, no one is
        diverged, and 106/206 bodies are byte-identical. Returns a result dict (ok True/False)."""
        deadline = time.monotonic() + timeout
        t0 = time.monotonic()
        last = {}
        while True:
            sts = self.statuses()
            bodies = {}
            for nd in self.member_nodes():
                bodies[nd.id] = client.table_bodies(nd.client_addr)
            last = {"status": {str(k): v for k, v in sts.items()},
                    "tables_identical": len({repr(b) for b in bodies.values()}) == 1
                    and None not in bodies.values()}
            pairs = {(st.get("applied_index"), st.get("digest")) if st else None
                     for st in sts.values()}
            diverged = [k for k, st in sts.items() if st and st.get("diverged")]
            ok = (None not in pairs and len(pairs) == 1 and not diverged
                  and last["tables_identical"])
            if ok or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        last["ok"] = ok
        last["diverged"] = diverged
        last["seconds"] = round(time.monotonic() - t0, 3)
        if not last["tables_identical"]:
            last["tables"] = {str(k): [None if x is None else x.decode("utf-8", "replace")[:2000]
                                       for x in (v or (None, None))]
                              for k, v in bodies.items()}
        return last

    def scan_logs(self):
        """{node id: [matching lines]} for every marker found in any node log."""
        found = {}
        for nd in self.nodes.values():
            if not os.path.exists(nd.log_path):
                continue
            with open(nd.log_path, "r", errors="replace") as f:
                hits = [line.rstrip()[:300] for line in f if any(m in line for m in LOG_MARKERS)]
            if hits:
                found[str(nd.id)] = hits[:20]
        return found
