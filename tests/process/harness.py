"""Process-test harness: starts real raftns nodes on 127.0.0.1 with free ports and fresh temp
data dirs, waits for readiness with a deadline, stops/kills/restarts them, scans their logs for
sanitizer reports, and always cleans up every process it started (by PID) and every temp dir.
It also holds the tiny unittest runner that prints node logs of failed tests. It does not know
the protocol beyond the readiness probe (nsclient.py does)."""

import atexit
import hashlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nsclient  # noqa: E402
import scale  # noqa: E402

RAFTNS_BIN = os.environ.get("RAFTNS_BIN", "/work/main/build/raftns")
SANITIZE = scale.SANITIZE
SCALE = scale.SCALE
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer",
                     "ERROR: ThreadSanitizer")

ALL_NODES = []      # every Node ever created in this process (for atexit cleanup)
TEST_NODES = []     # nodes relevant to the current test (logs printed on failure)


def T(seconds):
    """A deadline scaled by RAFTNS_TEST_SCALE (x3 for sanitizer builds): scale.py is the one
    source, this is the name the tests use."""
    return scale.T(seconds)


def expired(what, timeout, last):
    """The message of a deadline that passed: its name, its scaled length, what was seen."""
    return "deadline expired: %s, after %s; last observed: %r" % (
        what, scale.describe(timeout), last)


# Claims on ports, held for this process's life (closed with it by the kernel).
_PORT_CLAIMS = {}


def claim_port(port):
    """Claims port for this process among all test processes on the machine (Python, C and
    Node tiers alike): an abstract Unix socket named after the port, which only one process
    can bind and which goes away with its process, so no file is left behind. The name fills
    the whole sun_path, NUL-padded, as Node (libuv) binds it. False when another test
    process, or this one, already holds it."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(("\0raftns-test-port-%d" % port).encode().ljust(108, b"\0"))
    except OSError:
        s.close()
        return False
    _PORT_CLAIMS[port] = s
    return True


def free_ports(n):
    """n TCP ports on 127.0.0.1 below the kernel's ephemeral range (32768 and up by default),
    as tests/cluster/free_port.h picks them: an ephemeral one can be taken by another test's
    outgoing connection between this choice and the node's bind ("address already in use",
    seen in CI). Random in [20000, 32000), each claimed (claim_port: tests running in
    parallel picked the same port between one's check and its node's bind, also seen in CI)
    and checked free by binding."""
    rng = random.SystemRandom()
    ports = []
    for _ in range(20000):
        if len(ports) == n:
            break
        port = rng.randrange(20000, 32000)
        if not claim_port(port):
            continue
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", port))
            s.listen(1)
        except OSError:
            continue
        finally:
            s.close()
        ports.append(port)
    if len(ports) < n:
        raise RuntimeError("no %d free ports in [20000, 32000)" % n)
    return ports


class Seen:
    """A falsy poll result that carries what the poll saw, so that wait_until's failure says
    it: `return observed(r.code == 17, r)`."""

    def __init__(self, value):
        self.value = value

    def __bool__(self):
        return False

    def __repr__(self):
        return repr(self.value)


def unshared_names(prefix, n):
    """n topic names (prefix + 24 hex digits) that share no more than the prefix with their
    sorted neighbours, so that the compact command format (raft/command_topics.c) keeps
    registrations of them near their full size: a test that needs bytes of raft log uses
    these."""
    return ["%s%s" % (prefix, hashlib.sha1(b"%d" % i).hexdigest()[:24]) for i in range(n)]


def observed(ok, seen):
    """True when ok, else a falsy Seen(seen): the result of a yes/no poll for wait_until."""
    return True if ok else Seen(seen)


def wait_until(pred, timeout, what, interval=0.05):
    """Polls pred() until it returns a truthy value or the deadline (timeout seconds, already
    scaled: pass T(n)) passes: AssertionError naming what, the deadline and pred's last value
    (or exception). Give pred a value worth reading: an observation, not only False."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = pred()
            if last:
                return last
        except (OSError, nsclient.ConnectionClosed, TimeoutError) as e:
            last = e
        if time.monotonic() >= deadline:
            raise AssertionError(expired(what, timeout, last))
        time.sleep(interval)


def assert_closed(conn, timeout, what):
    """Asserts the peer closes nsclient.Conn conn within timeout (scaled: pass T(n)); the
    failure names the deadline what and the bytes that came instead."""
    if not conn.wait_closed(timeout):
        raise AssertionError(expired(what, timeout, "still open, %d bytes received: %r" % (
            len(conn.buf), bytes(conn.buf[:64]))))


class Node:
    """One raftns process with its own temp work dir (data dir + log file)."""

    def __init__(self, sets=None, log_level="info", extra_args=None, tls=None):
        self.sets = dict(sets or {})
        self.tls = tls  # ssl.SSLContext for the readiness probe and conn(), None = plain
        self.log_level = log_level
        self.extra_args = list(extra_args or [])
        self.workdir = tempfile.mkdtemp(prefix="raftns-pytest-")
        self.data_dir = os.path.join(self.workdir, "data")
        os.mkdir(self.data_dir)
        self.log_path = os.path.join(self.workdir, "node.log")
        self.client_port, self.raft_port, self.http_port = free_ports(3)
        self.proc = None
        self.last_probe = None  # what the last readiness probe saw (for failure messages)
        self.final_log = ""
        self.cleaned = False
        ALL_NODES.append(self)
        TEST_NODES.append(self)

    @property
    def addr(self):
        return ("127.0.0.1", self.client_port)

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def argv(self):
        a = [RAFTNS_BIN, "--data-dir", self.data_dir,
             "--client-addr", "127.0.0.1:%d" % self.client_port,
             "--raft-addr", "127.0.0.1:%d" % self.raft_port,
             "--http-addr", "127.0.0.1:%d" % self.http_port,
             "--id", "1", "--log-level", self.log_level]
        for k, v in self.sets.items():
            a += ["--set", "%s=%s" % (k, v)]
        return a + self.extra_args

    def start(self, wait=True, timeout=None):
        assert self.proc is None or self.proc.poll() is not None, "node already running"
        if not os.access(RAFTNS_BIN, os.X_OK):
            raise AssertionError("raftns binary not found or not executable: %s "
                                 "(set RAFTNS_BIN)" % RAFTNS_BIN)
        env = dict(os.environ)
        if SANITIZE:
            env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
            env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
        with open(self.log_path, "ab") as log:
            log.write(b"==== harness: starting %s\n" % " ".join(self.argv()).encode())
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log, env=env)
        if wait:
            self.wait_ready(timeout)
        return self

    def is_ready(self):
        try:
            with nsclient.Conn(self.addr, timeout=T(1.0), tls=self.tls) as c:
                r = c.request(nsclient.GET_BROKER_CLUSTER_INFO, timeout=T(1.0))
                served_by = (r.ext or {}).get("raftnsServedBy")
                self.last_probe = "106 answered code %d %r (served by %s)" % (
                    r.code, r.remark, served_by or "itself")
                # A node that is not ready forwards reads (docs/readiness.md): an answer
                # another node served says nothing about this node's own readiness.
                return r.code == 0 and served_by is None
        except (OSError, nsclient.ConnectionClosed, nsclient.ProtocolError, TimeoutError,
                ValueError) as e:
            self.last_probe = e
            return False

    def wait_ready(self, timeout=None):
        timeout = timeout or T(15.0)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("raftns exited with %s before becoming ready\n%s" %
                                     (self.proc.returncode, self.log_tail()))
            if self.is_ready():
                return
            time.sleep(0.05)
        raise AssertionError("%s\n%s" % (expired(
            "raftns pid %s ready (GET_BROKER_CLUSTER_INFO answered by itself with 0)" % self.pid,
            timeout,
            self.last_probe), self.log_tail()))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=None, check=True):
        """SIGTERM, wait; asserts exit code 0 and a clean log when check."""
        already = self.proc is not None and self.proc.poll() is not None
        if self.proc is None or already:
            rc = self.proc.returncode if self.proc else 0
        else:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout or T(10.0))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                if check:
                    raise AssertionError("%s\n%s" % (expired(
                        "raftns pid %s exits after SIGTERM" % self.proc.pid,
                        timeout or T(10.0), "still running, killed with SIGKILL"),
                        self.log_tail()))
                return None
        if check:
            self.assert_clean_log()
            if rc != 0:
                raise AssertionError("raftns %s %s (expected 0 after SIGTERM)\n%s" % (
                    "had already exited with code" if already else "exit code", rc,
                    self.log_tail()))
        return rc

    def kill9(self):
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def restart(self, timeout=None):
        self.stop()
        return self.start(timeout=timeout)

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return self.final_log

    def log_tail(self, n=200):
        lines = self.log_text().splitlines()
        return "---- raftns log (%s, last %d lines) ----\n%s\n---- end of log ----" % (
            self.log_path, min(n, len(lines)), "\n".join(lines[-n:]))

    def sanitizer_report(self):
        text = self.log_text()
        for m in SANITIZER_MARKERS:
            i = text.find(m)
            if i >= 0:
                return text[max(0, i - 200):i + 3000]
        return None

    def assert_clean_log(self):
        rep = self.sanitizer_report()
        if rep:
            raise AssertionError("sanitizer report in raftns log:\n" + rep)

    def rss_kb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def cleanup(self, check=True):
        """Stops the process (checked) and removes the temp dir. Idempotent."""
        if self.cleaned:
            return
        err = None
        try:
            self.stop(check=check)
        except AssertionError as e:
            err = e
        finally:
            self.kill9()
            self.final_log = self.log_text()
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.cleaned = True
        if err:
            raise err


@atexit.register
def _cleanup_all():
    for n in ALL_NODES:
        try:
            n.cleanup(check=False)
        except Exception:  # noqa: BLE001 - last-resort cleanup
            pass


class NodeTestCase(unittest.TestCase):
    """A test case that starts a fresh node per test (override node_sets / START to tune)."""

    node_sets = {}
    START = True

    def setUp(self):
        del TEST_NODES[:]
        self.nodes = []
        if self.START:
            self.node = self.new_node(self.node_sets)

    def new_node(self, sets=None, start=True):
        n = Node(sets)
        self.nodes.append(n)
        if start:
            n.start()
        return n

    def tearDown(self):
        errs = []
        for n in self.nodes:
            try:
                n.cleanup(check=True)
            except AssertionError as e:
                errs.append(str(e))
        if errs:
            raise AssertionError("\n".join(errs))

    def conn(self, node=None, timeout=None):
        node = node or self.node
        c = nsclient.Conn(node.addr, timeout=timeout or T(5.0), tls=node.tls)
        self.addCleanup(c.close)
        return c


class LogDumpingResult(unittest.TextTestResult):
    def _dump(self, test):
        for n in list(TEST_NODES):
            self.stream.write("\n[%s] node pid %s log:\n%s\n" % (test.id(), n.pid, n.log_tail()))
        self.stream.flush()

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._dump(test)

    def addError(self, test, err):
        super().addError(test, err)
        self._dump(test)


def main():
    runner = unittest.TextTestRunner(resultclass=LogDumpingResult, verbosity=2)
    unittest.main(testRunner=runner)
