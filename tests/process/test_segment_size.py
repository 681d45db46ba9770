"""raft_uv's log segments are 8 MiB (raft/node/node_int.h SEGMENT_SIZE). With 1 MiB segments a
node opened a new segment every ~290 changed 100-topic registrations, and the first writes into a
fresh segment blocked the loop inside io_submit for 5-44 ms each: ~30 % of the loop's time at
~10 new segments a second, which held one node at ~2,900 registrations/s (BENCHMARKS.md,
"Segment size"). raft_uv preallocates every open segment to the segment size, so the open
segment files in a data dir show the size the node runs with."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import nsclient as ns  # noqa: E402
from clusterh import T  # noqa: E402

SEGMENT_BYTES = 8 * 1024 * 1024


class SegmentSize(unittest.TestCase):
    def setUp(self):
        why = clusterh.config_unsupported()
        if why:
            raise unittest.SkipTest(why)
        self.cluster = clusterh.Cluster(1)
        self.addCleanup(self.cluster.cleanup)
        self.cluster.start()

    def open_segments(self, nd):
        return {f: os.path.getsize(os.path.join(nd.data_dir, f))
                for f in os.listdir(nd.data_dir) if f.startswith("open-")}

    def test_open_segments_are_preallocated_to_8_mib(self):
        nd = self.cluster.leader()
        with nd.conn(timeout=T(10.0)) as conn:
            r = conn.request(ns.PUT_KV_CONFIG, {"namespace": "seg", "key": "k", "value": "v"},
                             timeout=T(10.0))
            self.assertEqual(r.code, 0, r)
        deadline = time.monotonic() + T(10.0)
        segs = self.open_segments(nd)
        while not segs and time.monotonic() < deadline:
            time.sleep(0.05)
            segs = self.open_segments(nd)
        self.assertTrue(segs, "no open segment in %s" % nd.data_dir)
        for name, size in segs.items():
            self.assertEqual(size, SEGMENT_BYTES,
                             "%s is %d bytes: raft_uv runs with another segment size" % (
                                 name, size))


if __name__ == "__main__":
    clusterh.main()
