"""Process tests of raftns as an installed service: `cmake --install` into a scratch prefix
(binaries, man pages, example cluster file, systemd unit), `systemd-analyze verify` of the unit,
`--version` of both binaries, the sd_notify protocol (READY=1 only once the node is ready,
STOPPING=1 on SIGTERM) on a NOTIFY_SOCKET this test creates, and --log-file / --log-format json
with the reopen on SIGHUP that logrotate needs. It does not run systemd itself."""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, observed, wait_until  # noqa: E402

CTL_BIN = os.environ.get("RAFTNSCTL_BIN", "/work/main/build/raftnsctl")
VERSION = re.compile(r"^(raftns|raftnsctl) (\d+\.\d+\.\d+) \(git (\S+)\)$")


def build_dir():
    d = os.path.dirname(os.path.abspath(harness.RAFTNS_BIN))
    return d if os.path.exists(os.path.join(d, "CMakeCache.txt")) else None


def ensure_systemd_analyze():
    """systemd-analyze, installed when missing (Debian, as root); None when it cannot be."""
    path = shutil.which("systemd-analyze")
    if path or os.geteuid() != 0 or not shutil.which("apt-get"):
        return path
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "-o", "DPkg::Lock::Timeout=300", "update", "-qq"],
                ["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "-qq",
                 "--no-install-recommends", "systemd"]):
        if subprocess.run(cmd, env=env, capture_output=True, timeout=900).returncode != 0:
            return None
    return shutil.which("systemd-analyze")


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.build = build_dir()
        if cls.build is None:
            raise unittest.SkipTest("RAFTNS_BIN (%s) is not in a cmake build dir: nothing to "
                                    "install" % harness.RAFTNS_BIN)
        cls.prefix = tempfile.mkdtemp(prefix="raftns-prefix-")
        out = subprocess.run(["cmake", "--install", cls.build, "--prefix", cls.prefix],
                             capture_output=True, timeout=T(120))
        cls.install_log = (out.stdout + out.stderr).decode()
        cls.install_rc = out.returncode

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.prefix, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.prefix, *parts)

    def test_files_in_their_places(self):
        self.assertEqual(self.install_rc, 0, self.install_log)
        for rel in ("sbin/raftns", "bin/raftnsctl", "share/man/man8/raftns.8",
                    "share/man/man1/raftnsctl.1", "etc/raftns/cluster.example.json",
                    "lib/systemd/system/raftns@.service",
                    "share/doc/raftns/grafana-dashboard.json",
                    "share/doc/raftns/prometheus-alerts.yml"):
            self.assertTrue(os.path.isfile(self.path(rel)), rel + "\n" + self.install_log)
        for rel in ("sbin/raftns", "bin/raftnsctl"):
            self.assertTrue(os.access(self.path(rel), os.X_OK), rel)

    def test_version_of_both_binaries(self):
        seen = {}
        for rel in ("sbin/raftns", "bin/raftnsctl"):
            p = subprocess.run([self.path(rel), "--version"], capture_output=True,
                               timeout=T(10))
            self.assertEqual(p.returncode, 0, p.stderr)
            m = VERSION.match(p.stdout.decode().strip())
            self.assertIsNotNone(m, p.stdout)
            seen[m.group(1)] = m.group(2, 3)
        self.assertEqual(seen["raftns"], seen["raftnsctl"])
        git = shutil.which("git")
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        if git and subprocess.run([git, "-C", root, "rev-parse"],
                                  capture_output=True).returncode == 0:
            # a commit of this checkout: HEAD itself, or one before it when commits were
            # made after the build
            rev = seen["raftns"][1].replace("-dirty", "")
            p = subprocess.run([git, "-C", root, "merge-base", "--is-ancestor", rev, "HEAD"],
                               capture_output=True)
            self.assertEqual(p.returncode, 0, (seen, p.stderr))

    def test_man_pages_render_without_warnings(self):
        groff = shutil.which("groff")
        if groff is None:
            self.skipTest("groff is not installed (scripts/setup.sh --test installs it)")
        for rel, name in (("share/man/man8/raftns.8", "raftns"),
                          ("share/man/man1/raftnsctl.1", "raftnsctl")):
            p = subprocess.run([groff, "-man", "-Tutf8", "-ww", self.path(rel)],
                               capture_output=True, timeout=T(30))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stderr.decode(), "", rel)
            text = re.sub(r".\x08", "", p.stdout.decode())
            for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "SEE ALSO"):
                self.assertIn("\n" + section, text, (rel, section))
            self.assertIn(name + " ", text)
            self.assertIn("--version", text)

    def test_man_pages_cover_every_option_and_command(self):
        """Every flag of `raftns --help` and every command of `raftnsctl --help` is in the
        installed man page (roff source, escapes and quotes removed)."""
        def source(rel):
            with open(self.path(rel)) as f:
                text = f.read().replace("\\-", "-").replace('"', "")
            return re.sub(r"\\f[BIRP]", "", text)
        man8 = source("share/man/man8/raftns.8")
        out = subprocess.run([self.path("sbin/raftns"), "--help"], capture_output=True,
                             timeout=T(10)).stdout.decode()
        flags = sorted(set(re.findall(r"^\s+(--[a-z][a-z-]*)", out, re.M)))
        self.assertGreater(len(flags), 15, out)
        self.assertEqual([f for f in flags if f not in man8], [], "raftns(8) lacks these")
        man1 = source("share/man/man1/raftnsctl.1")
        out = subprocess.run([self.path("bin/raftnsctl"), "--help"], capture_output=True,
                             timeout=T(10)).stdout.decode()
        commands = out.split("commands:", 1)[1].split("exit status", 1)[0]
        names = set()
        for line in commands.splitlines():
            m = re.match(r"^  ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?\b", line)
            if m:
                names.add(" ".join(g for g in m.groups() if g))
        self.assertGreater(len(names), 10, commands)
        self.assertEqual(sorted(n for n in names if n not in man1), [],
                         "raftnsctl(1) lacks these")
        opts = sorted(set(re.findall(r"^\s+(--[a-z][a-z-]*)", out, re.M)))
        self.assertEqual([o for o in opts if o not in man1], [], "raftnsctl(1) lacks these")

    def test_unit_is_hardened_and_notifies(self):
        with open(self.path("lib/systemd/system/raftns@.service")) as f:
            unit = f.read()
        self.assertIn("Type=notify\n", unit)
        self.assertIn("ExecStart=%s --config /etc/raftns/cluster.json --id %%i" %
                      self.path("sbin/raftns"), unit)
        for key in ("NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes",
                    "PrivateTmp=yes", "CapabilityBoundingSet=\n", "SystemCallFilter=",
                    "RestrictAddressFamilies=", "StateDirectory=raftns/%i",
                    "ExecReload=/bin/kill -HUP $MAINPID"):
            self.assertIn(key, unit)

    def test_systemd_analyze_verify(self):
        analyze = ensure_systemd_analyze()
        if analyze is None:
            self.skipTest("systemd-analyze is missing and could not be installed (not root, "
                          "or no apt-get): scripts/setup.sh --test installs systemd")
        work = tempfile.mkdtemp(prefix="raftns-unit-")
        try:
            # a template is verified through an instance of it
            inst = os.path.join(work, "raftns@1.service")
            shutil.copy(self.path("lib/systemd/system/raftns@.service"), inst)
            env = dict(os.environ, MANPATH=self.path("share/man"), SYSTEMD_LOG_LEVEL="notice")
            p = subprocess.run([analyze, "verify", inst], capture_output=True, env=env,
                               timeout=T(60))
            out = (p.stdout + p.stderr).decode()
            self.assertEqual(p.returncode, 0, out)
            self.assertNotIn("raftns@1.service:", out, out)
            # a unit naming a binary that does not exist fails: the check can fail
            with open(inst) as f:
                broken = f.read().replace(self.path("sbin/raftns"), self.path("sbin/nothing"))
            with open(inst, "w") as f:
                f.write(broken)
            p = subprocess.run([analyze, "verify", inst], capture_output=True, env=env,
                               timeout=T(60))
            self.assertNotEqual(p.returncode, 0, (p.stdout + p.stderr).decode())
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def test_example_cluster_file_checks(self):
        work = tempfile.mkdtemp(prefix="raftns-example-")
        try:
            cfg = os.path.join(work, "cluster.json")
            shutil.copy(self.path("etc/raftns/cluster.example.json"), cfg)
            with open(os.path.join(work, "cluster.secret"), "w") as f:
                f.write(os.urandom(32).hex())
            os.chmod(os.path.join(work, "cluster.secret"), 0o600)
            p = subprocess.run([self.path("sbin/raftns"), "--check-config", cfg],
                               capture_output=True, timeout=T(10))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(b"ok: 3 nodes", p.stdout)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def syscall_group(analyze, group, seen=None):
    """The system calls of a systemd syscall-filter group, its nested groups resolved."""
    seen = set() if seen is None else seen
    if group in seen:
        return set()
    seen.add(group)
    out = subprocess.run([analyze, "syscall-filter", group], capture_output=True,
                         timeout=T(30)).stdout.decode()
    calls = set()
    for line in out.splitlines()[1:]:
        word = line.strip()
        if not word or word.startswith("#"):
            continue
        calls |= syscall_group(analyze, word, seen) if word.startswith("@") else {word}
    return calls


class SyscallFilter(harness.NodeTestCase):
    """The unit's SystemCallFilter=@system-service allows every call a node makes: a node
    run under strace (start, a client, /metrics, SIGHUP, SIGTERM) uses no other."""
    START = False

    def test_node_stays_within_system_service(self):
        if harness.SANITIZE:
            self.skipTest("a sanitizer build: LeakSanitizer cannot run under ptrace, and its "
                          "runtime makes calls of its own (the normal build runs this)")
        analyze, strace = shutil.which("systemd-analyze"), shutil.which("strace")
        if analyze is None or strace is None:
            self.skipTest("needs systemd-analyze and strace (scripts/setup.sh --test)")
        allowed = syscall_group(analyze, "@system-service")
        self.assertIn("epoll_wait", allowed)
        trace = tempfile.mktemp(prefix="raftns-strace-")
        node = harness.Node()
        self.nodes.append(node)
        real_argv = node.argv
        node.argv = lambda: [strace, "-f", "-qq", "-o", trace] + real_argv()
        try:
            node.start(timeout=T(30))
            with ns.Conn(node.addr, timeout=T(5)) as c:
                c.request(ns.GET_BROKER_CLUSTER_INFO, timeout=T(5))
            conn = http.client.HTTPConnection("127.0.0.1", node.http_port, timeout=T(5))
            conn.request("GET", "/metrics")
            self.assertEqual(conn.getresponse().status, 200)
            conn.close()
            # signals go to raftns itself, strace's child (strace would detach on them)
            with open("/proc/%d/task/%d/children" % (node.pid, node.pid)) as f:
                child = int(f.read().split()[0])
            os.kill(child, signal.SIGHUP)
            wait_until(lambda: observed("received SIGHUP" in node.log_text(),
                                        node.log_tail(3)), T(10), "the SIGHUP handled")
            os.kill(child, signal.SIGTERM)
            self.assertEqual(node.proc.wait(T(20)), 0, node.log_tail())
            used = set()
            with open(trace) as f:
                for line in f:
                    m = re.match(r"^\d+\s+([a-z0-9_]+)\(", line)
                    if m:
                        used.add(m.group(1))
            self.assertTrue(used & {"epoll_wait", "epoll_pwait"}, sorted(used))
            # execve is strace starting raftns, before the filter would apply
            self.assertEqual(sorted(used - allowed - {"execve"}), [],
                             "calls outside @system-service")
        finally:
            if os.path.exists(trace):
                os.unlink(trace)


class NotifySocket:
    """A datagram socket like systemd's NOTIFY_SOCKET (a path, or '@name' = abstract)."""

    def __init__(self, abstract=False):
        self.dir = tempfile.mkdtemp(prefix="raftns-notify-")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            self.name = "@raftns-test-%d-%d" % (os.getpid(), id(self))
            self.sock.bind("\0" + self.name[1:])
        else:
            self.name = os.path.join(self.dir, "notify")
            self.sock.bind(self.name)
        self.messages = []

    def wait_for(self, field, timeout):
        """The first message holding the line `field`, read with a deadline."""
        deadline = time.monotonic() + timeout
        while True:
            for m in self.messages:
                if field in m.split("\n"):
                    return m
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(harness.expired("%s on %s" % (field, self.name), timeout,
                                                     self.messages))
            self.sock.settimeout(left)
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except socket.timeout:
                pass

    def close(self):
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def start_with_notify(node, sock):
    old = os.environ.get("NOTIFY_SOCKET")
    os.environ["NOTIFY_SOCKET"] = sock.name
    try:
        node.start(wait=False)
    finally:
        if old is None:
            del os.environ["NOTIFY_SOCKET"]
        else:
            os.environ["NOTIFY_SOCKET"] = old


class Notify(harness.NodeTestCase):
    START = False

    def check_ready_then_stopping(self, abstract):
        sock = NotifySocket(abstract=abstract)
        try:
            node = harness.Node()
            self.nodes.append(node)
            start_with_notify(node, sock)
            msg = sock.wait_for("READY=1", T(15))
            self.assertTrue(node.is_ready(), "READY=1 before the node answered: %r" % msg)
            self.assertIn("STATUS=ready (node 1)", msg)
            node.proc.send_signal(signal.SIGTERM)
            sock.wait_for("STOPPING=1", T(10))
            self.assertEqual(node.proc.wait(T(15)), 0)
            node.cleanup(check=True)
        finally:
            sock.close()

    def test_ready_and_stopping_on_a_path_socket(self):
        self.check_ready_then_stopping(abstract=False)

    def test_ready_and_stopping_on_an_abstract_socket(self):
        self.check_ready_then_stopping(abstract=True)


class NotifyWaitsForQuorum(unittest.TestCase):
    """A cluster node is not READY while it has no quorum (systemd keeps it 'activating')."""

    def test_ready_only_with_a_quorum(self):
        why = clusterh.config_unsupported()
        if why:
            self.skipTest(why)
        cluster = clusterh.Cluster(3)
        sock = NotifySocket()
        try:
            start_with_notify(cluster[1], sock)
            # 3 election timeouts alone: raft cannot elect, so nothing may arrive
            sock.sock.settimeout(3 * cluster.election_ms / 1000.0)
            try:
                early = sock.sock.recv(4096).decode()
            except socket.timeout:
                early = None
            self.assertIsNone(early, "READY without a quorum")
            cluster[2].start(wait=False)
            sock.wait_for("READY=1", T(20))
            self.assertTrue(cluster[1].is_ready())
        finally:
            sock.close()
            cluster.cleanup(check=True)


class LogFile(harness.NodeTestCase):
    START = False

    def test_json_lines_to_a_file_reopened_on_sighup(self):
        logdir = tempfile.mkdtemp(prefix="raftns-logs-")
        try:
            path = os.path.join(logdir, "raftns.log")
            node = harness.Node(extra_args=["--log-file", path, "--log-format", "json"])
            self.nodes.append(node)
            node.start()
            wait_until(lambda: observed(os.path.exists(path), os.listdir(logdir)), T(5),
                       "the log file")
            with open(path) as f:
                lines = [json.loads(ln) for ln in f if ln.strip()]
            self.assertTrue(any("started" in ln["msg"] for ln in lines), lines[:5])
            for ln in lines:
                self.assertEqual(sorted(ln), ["level", "msg", "node", "time"])
                self.assertEqual(ln["node"], 1)
            # nothing but the harness's own line went to stderr
            stderr = [ln for ln in node.log_text().splitlines()
                      if not ln.startswith("==== harness")]
            self.assertEqual(stderr, [])
            # logrotate: rename, then SIGHUP; the node writes to a new file at the path
            os.rename(path, path + ".1")
            node.proc.send_signal(signal.SIGHUP)

            def reopened():
                if not os.path.exists(path):
                    return observed(False, os.listdir(logdir))
                with open(path) as f:
                    text = f.read()
                return observed("reopened" in text, text)
            wait_until(reopened, T(10), "a new log file with the reopen line")
            node.proc.send_signal(signal.SIGHUP)  # logs again: into the new file only
            wait_until(lambda: observed(open(path).read().count("received SIGHUP") >= 1,
                                        open(path).read()), T(10), "a line after the reopen")
            with open(path + ".1") as f:
                old = f.read()
            self.assertNotIn("reopened", old)
            node.stop()
        finally:
            shutil.rmtree(logdir, ignore_errors=True)

    def test_unwritable_log_file_named(self):
        bad = os.path.join(tempfile.gettempdir(), "raftns-no-such-dir-%d" % os.getpid(), "x.log")
        client, raft, http = harness.free_ports(3)
        work = tempfile.mkdtemp(prefix="raftns-logs-")
        try:
            p = subprocess.run([harness.RAFTNS_BIN, "--data-dir", os.path.join(work, "d"),
                                "--client-addr", "127.0.0.1:%d" % client,
                                "--raft-addr", "127.0.0.1:%d" % raft,
                                "--http-addr", "127.0.0.1:%d" % http, "--log-file", bad],
                               capture_output=True, timeout=T(10))
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(("cannot open --log-file %s" % bad).encode(), p.stderr)
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    harness.main()
