"""Two raftns processes on one data dir: the second must refuse to start with a clear message
naming the holder, and the first must keep serving and stop cleanly (before the lock, they
shared one raft log and the first crashed at shutdown)."""

import subprocess

import harness
import nsclient as ns
from harness import T


class DataDirLock(harness.NodeTestCase):
    def test_second_process_on_a_data_dir_refuses_to_start(self):
        first = self.new_node()
        second = harness.Node()
        harness.ALL_NODES.append(second)
        self.addCleanup(second.cleanup, check=False)
        second.data_dir = first.data_dir
        p = subprocess.run(second.argv(), capture_output=True, text=True, timeout=T(30))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("in use by another raftns process (pid %d)" % first.pid, p.stderr)
        # the first one never noticed
        r = ns.request_once(first.addr, ns.PUT_KV_CONFIG,
                            {"namespace": "lock", "key": "k", "value": "v"})
        self.assertEqual(r.code, 0)
        self.assertEqual(first.stop(), 0)
        # once it stopped the dir is free again
        second.start()
        r = ns.request_once(second.addr, ns.GET_KV_CONFIG, {"namespace": "lock", "key": "k"})
        self.assertEqual((r.code, r.ext.get("value")), (0, "v"))


if __name__ == "__main__":
    harness.main()
