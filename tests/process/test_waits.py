"""--wait NAME=MS (docs/waits.md): a configured wait takes effect, and a malformed one stops the
node at start. A lone member of a 3-node cluster never has a leader, so a write there waits the
whole write wait and is refused with a remark naming it. Only lower bounds on elapsed time are
asserted (they hold on a loaded machine): the default of 3000 ms would answer sooner."""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, wait_until  # noqa: E402

WRITE_WAIT_MS = 4500


class Waits(unittest.TestCase):
    def setUp(self):
        why = clusterh.config_unsupported()
        if why:
            raise unittest.SkipTest(why)
        self.cluster = clusterh.Cluster(3)
        self.addCleanup(self.cluster.cleanup)

    def test_write_wait_is_the_configured_one(self):
        lone = self.cluster[1]
        lone.extra_args += ["--wait", "write=%d" % WRITE_WAIT_MS, "--wait", "apply-min=1"]
        lone.start(wait=False)
        wait_until(lambda: lone.alive() and self.listening(lone), T(15.0),
                   "node 1 listening")
        with ns.Conn(lone.addr, timeout=T(30.0)) as c:
            t0 = time.monotonic()
            r = c.request(ns.PUT_KV_CONFIG, {"namespace": "w", "key": "k", "value": "v"},
                          timeout=T(30.0))
            elapsed = time.monotonic() - t0
        self.assertEqual(r.code, 1, r.remark)
        self.assertIn("within %d ms" % WRITE_WAIT_MS, r.remark or "")
        self.assertGreaterEqual(elapsed, WRITE_WAIT_MS / 1000.0 - 0.05)

    @staticmethod
    def listening(nd):
        try:
            with ns.Conn(nd.addr, timeout=T(1.0)):
                return True
        except OSError:
            return False

    def test_malformed_wait_stops_the_node(self):
        for bad, why in (("writ=100", "unknown wait writ"), ("write=0", "whole milliseconds"),
                         ("write", "want NAME=MS")):
            nd = self.cluster[2]
            r = subprocess.run(nd.argv() + ["--wait", bad], capture_output=True, text=True,
                               timeout=T(30.0))
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(why, r.stderr)


if __name__ == "__main__":
    harness.main()
