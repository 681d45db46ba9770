"""A write sent to a follower is answered in one round trip to the leader (issue 11 item 3,
raft/node/node_notice.c, experimental and off by default): the leader tells the follower that the entry committed as soon as the
follower has stored it, instead of leaving that to its next heartbeat. The heartbeat is set to
1 s here, so a follower that learned the commit from heartbeats would answer ten sequential
writes in about ten seconds; the bound below is three heartbeat intervals for all ten. Every
answer must also be readable on that follower at once (it answers only after applying)."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import nsclient as ns  # noqa: E402
from clusterh import T  # noqa: E402

HEARTBEAT_MS = 1000
WRITES = 10


class FollowerWrite(unittest.TestCase):
    def setUp(self):
        why = clusterh.config_unsupported()
        if why:
            raise unittest.SkipTest(why)
        self.cluster = clusterh.Cluster(3, election_ms=3 * HEARTBEAT_MS,
                                        heartbeat_ms=HEARTBEAT_MS)
        self.addCleanup(self.cluster.cleanup)
        self.cluster.start()

    def put(self, conn, key, value):
        r = conn.request(ns.PUT_KV_CONFIG, {"namespace": "fw", "key": key, "value": value},
                         timeout=T(30.0))
        self.assertEqual(r.code, 0, r)

    def test_follower_write_does_not_wait_for_a_heartbeat(self):
        c = self.cluster
        fol = c.followers(c.leader())[0]
        with fol.conn(timeout=T(30.0)) as conn:
            self.put(conn, "warm", "up")  # the follower's first forward opens its connection
            t0 = time.monotonic()
            for i in range(WRITES):
                self.put(conn, "k%d" % i, "v%d" % i)
                got = conn.request(ns.GET_KV_CONFIG, {"namespace": "fw", "key": "k%d" % i},
                                   timeout=T(10.0))
                self.assertEqual(got.code, 0, got)
                self.assertEqual((got.ext or {}).get("value"), "v%d" % i, got)
            elapsed = time.monotonic() - t0
        bound = T(3.0 * HEARTBEAT_MS / 1000.0)
        self.assertLess(elapsed, bound,
                        "%d writes through follower %d took %.2f s (bound %.2f s, heartbeat "
                        "%d ms): the follower waited for heartbeats" % (
                            WRITES, fol.id, elapsed, bound, HEARTBEAT_MS))


if __name__ == "__main__":
    clusterh.main()
