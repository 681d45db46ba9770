"""Process tests of scripts/run.sh (the README's first command) on a generated 3-node cluster
file with free ports, the build under test and no package installs (RAFTNS_RUN_NO_BUILD): it
prints each node's state once that node is ready, keeps its data dirs apart from the one-node
default's, stops every node on SIGTERM with exit 0, and exits non-zero with the failing node's
last log lines when a node cannot start or dies. It does not test the packages setup.sh
installs."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import T  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RUN = os.path.join(ROOT, "scripts", "run.sh")


class RunScript:
    """scripts/run.sh in its own process group, its output collected by a thread."""

    def __init__(self, config, data):
        env = dict(os.environ, RAFTNS_RUN_CONFIG=config, RAFTNS_RUN_DATA=data,
                   RAFTNS_RUN_NO_BUILD="1", RAFTNS_RUN_READY_S=str(int(T(40))),
                   RAFTNS_RUN_BIN_DIR=os.path.dirname(os.path.abspath(harness.RAFTNS_BIN)))
        self.proc = subprocess.Popen(["bash", RUN], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.lines = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def text(self):
        return "\n".join(self.lines)

    def wait_line(self, pattern, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for ln in self.lines:
                if re.search(pattern, ln):
                    return ln
            if self.proc.poll() is not None and not self.thread.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(harness.expired("run.sh printing %r" % pattern, timeout,
                                             self.text()))

    def node_pids(self):
        m = re.search(r"\(pids ([\d ]+);", self.text())
        return [int(p) for p in m.group(1).split()] if m else []

    def wait(self, timeout):
        rc = self.proc.wait(timeout)
        self.thread.join(timeout)
        return rc

    def kill(self):
        """Cleanup: the script's process group (it and the nodes it started)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(T(10))
        for pid in self.node_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


class RunScriptTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="raftns-run-")
        self.data = os.path.join(self.dir, "data")
        ports = harness.free_ports(9)
        self.nodes = [{"id": i + 1, "raft": "127.0.0.1:%d" % ports[3 * i],
                       "client": "127.0.0.1:%d" % ports[3 * i + 1],
                       "http": "127.0.0.1:%d" % ports[3 * i + 2], "bootstrap": True}
                      for i in range(3)]
        self.config = os.path.join(self.dir, "trio.json")
        with open(self.config, "w") as f:
            json.dump({"secret": "raftns-run-test-secret-0123456789", "nodes": self.nodes}, f)
        self.run_sh = None

    def tearDown(self):
        if self.run_sh is not None:
            self.run_sh.kill()
        subprocess.run(["rm", "-rf", self.dir])

    def test_ready_lines_then_clean_stop(self):
        self.run_sh = RunScript(self.config, self.data)
        self.run_sh.wait_line(r"all 3 nodes ready", T(60))
        text = self.run_sh.text()
        for nd in self.nodes:
            m = re.search(r"node %d ready: (leader|follower), term \d+, applied \d+, client %s" %
                          (nd["id"], re.escape(nd["client"])), text)
            self.assertIsNotNone(m, text)
            self.assertLess(text.index(m.group(0)), text.index("all 3 nodes ready"))
        self.assertEqual(len(re.findall(r"ready: leader", text)), 1, text)
        # the data dirs are under the cluster file's name, not <data>/<id>
        self.assertEqual(sorted(os.listdir(os.path.join(self.data, "trio"))),
                         ["1", "1.log", "2", "2.log", "3", "3.log"])
        self.assertFalse(os.path.exists(os.path.join(self.data, "1")))
        pids = self.run_sh.node_pids()
        self.assertEqual(len(pids), 3, text)
        os.kill(self.run_sh.proc.pid, signal.SIGTERM)
        self.assertEqual(self.run_sh.wait(T(30)), 0, self.run_sh.text())
        self.assertIn("all 3 nodes stopped", self.run_sh.text())
        self.assertEqual([p for p in pids if alive(p)], [])

    def test_node_that_cannot_start_fails_the_script(self):
        taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        host, port = self.nodes[1]["raft"].rsplit(":", 1)
        taken.bind((host, int(port)))
        taken.listen(1)
        try:
            self.run_sh = RunScript(self.config, self.data)
            rc = self.run_sh.wait(T(60))
        finally:
            taken.close()
        text = self.run_sh.text()
        self.assertNotEqual(rc, 0, text)
        self.assertIn("node 2 exited with status", text)
        self.assertIn("cannot start raft on %s" % self.nodes[1]["raft"], text)
        self.assertNotIn("all 3 nodes ready", text)
        self.assertEqual([p for p in self.run_sh.node_pids() if alive(p)], [])

    def test_node_dying_later_fails_the_script(self):
        self.run_sh = RunScript(self.config, self.data)
        self.run_sh.wait_line(r"all 3 nodes ready", T(60))
        pids = self.run_sh.node_pids()
        os.kill(pids[2], signal.SIGKILL)
        rc = self.run_sh.wait(T(30))
        text = self.run_sh.text()
        self.assertNotEqual(rc, 0, text)
        self.assertIn("node 3 exited", text)
        self.assertIn("its last log lines", text)
        self.assertEqual([p for p in pids if alive(p)], [])

    def test_bad_file_refused_before_start(self):
        with open(self.config, "w") as f:
            json.dump({"secret": "raftns-run-test-secret-0123456789", "heartbeatMs": 5000,
                       "nodes": self.nodes}, f)
        self.run_sh = RunScript(self.config, self.data)
        rc = self.run_sh.wait(T(30))
        self.assertEqual(rc, 2, self.run_sh.text())
        self.assertIn("heartbeat 5000 ms must be shorter", self.run_sh.text())
        self.assertFalse(os.path.exists(self.data))


if __name__ == "__main__":
    harness.main()
