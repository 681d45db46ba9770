"""Snapshots encoded off the event loop (raft FSM version 3 on raft_uv 0.15 with io version 2,
a forked encoder; docs/raft-0.15.md §5) on real processes: a 3-node cluster with a small
snapshotBytes takes many snapshots while brokers register; a 4th node that joins afterwards can
only be fed by InstallSnapshot (2 trailing entries), a restarted node restores its own snapshot
from disk, and every node ends with the same applied index, digest, 106 and 206. The same
cluster with the default forkStateBytes captures its small state in steps of the loop's turns
(raft/node/node_snapcap.c), with no fork at all, and passes the same install and restore."""

import json
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
from clusterh import T, write_until_acked  # noqa: E402
from harness import wait_until  # noqa: E402

RAFTNSCTL = os.environ.get("RAFTNSCTL_BIN", "/work/main/build/raftnsctl")
SECRET = "raftns-test-secret"
TAKEN = re.compile(r"fsm: snapshot of (\d+) bytes encoded and written")


def ctl(nodes, *args):
    a = [RAFTNSCTL, "--secret", SECRET, "--timeout-ms", str(int(T(15.0) * 1000))]
    for nd in nodes:
        a += ["-n", "127.0.0.1:%d" % nd.client_port]
    return subprocess.run(a + list(args), capture_output=True, timeout=T(60.0), text=True)


class AsyncSnapshots(unittest.TestCase):
    def start(self, fork_state_bytes=None):
        del harness.TEST_NODES[:]
        self.brokers = []
        self.cluster = c = clusterh.Cluster(4, snapshot_threshold=64)
        c.config["snapshotBytes"] = 8192  # a snapshot every few registrations
        if fork_state_bytes is not None:
            c.config["forkStateBytes"] = fork_state_bytes
        c.config["nodes"][3]["bootstrap"] = False  # node 4 joins later
        with open(c.config_path, "w") as f:
            json.dump(c.config, f, indent=2)
        for i in (1, 2, 3):
            c[i].start(wait=False)
        c.wait_ready(nodes=self.three())
        c.leader(nodes=self.three())

    def tearDown(self):
        for b in self.brokers:
            b.close()
        self.cluster.cleanup(check=True)

    def three(self):
        return [self.cluster[i] for i in (1, 2, 3)]

    def register(self):
        ld = self.cluster.leader(nodes=self.three())
        for k in range(8):
            b = clusterh.Broker(name="broker-s%d" % k, addr="127.0.0.1:%d" % (47000 + k),
                                topics=harness.unshared_names("TopicS%d_" % k, 40))
            self.brokers.append(b)
        for rnd in range(12):
            for b in self.brokers:
                b.counter += 1
                write_until_acked(b, ld)
        self.cluster.wait_converged(nodes=self.three())
        taken = TAKEN.findall(ld.log_text())
        self.assertGreaterEqual(len(taken), 3, ld.log_tail())
        self.assertNotIn("was not taken", ld.log_text())
        return ld

    def test_small_state_is_captured_on_the_loop_install_and_restore(self):
        self.start()
        ld = self.register()
        for nd in self.three():
            self.assertEqual(nd.metric("raftns_fsm_forks_total"), 0, nd.log_tail())
        self.assertRegex(ld.log_text(), r"fsm: snapshot of \d+ bytes captured in \d+ loop turns")
        self.assertNotIn("fsm: snapshot encoded on the loop", ld.log_text())
        self.install_and_restore(ld)

    def test_snapshots_off_the_loop_install_and_restore(self):
        self.start(fork_state_bytes=1)  # every snapshot in a forked child
        ld = self.register()
        self.assertGreaterEqual(ld.metric("raftns_fsm_forks_total"), 3, ld.log_tail())
        self.assertNotIn("encoding on the loop", ld.log_text())
        self.install_and_restore(ld)

    def install_and_restore(self, ld):
        """A 4th node fed by InstallSnapshot, and a follower restarted from its own snapshot on
        disk, converge with the others."""
        c = self.cluster
        n4 = c[4]
        n4.start(wait=False)
        r = ctl(self.three(), "member", "add", "4", "127.0.0.1:%d" % n4.raft_port,
                "127.0.0.1:%d" % n4.client_port, n4.http_addr)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        n4.wait_ready(T(30.0))
        c.wait_converged(nodes=c.all())
        wait_until(lambda: "fsm: restored a snapshot" in n4.log_text(), T(10.0),
                   "node 4 fed by InstallSnapshot")

        # A follower restarted from its own snapshot on disk.
        f = next(nd for nd in self.three() if nd.id != ld.id)
        before = f.log_text().count("fsm: restored a snapshot")
        f.stop()
        f.start(wait=True, timeout=T(30.0))
        wait_until(lambda: f.log_text().count("fsm: restored a snapshot") > before, T(10.0),
                   "node %d restored its snapshot" % f.id)
        for b in self.brokers:
            b.counter += 1
            write_until_acked(b, c.leader(nodes=c.all()))
        c.wait_converged(nodes=c.all())


if __name__ == "__main__":
    clusterh.main()
