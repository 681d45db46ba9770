"""The raft peer relay's backpressure (raft/node/node_relay.c) on three real nodes: a follower is
paused (SIGSTOP) while the leader commits ~20 MiB of KV values with the other follower, so the
leader's relay to the paused one fills its write queue and stops reading libraft's pipe; after
SIGCONT the follower catches up and every node converges. /metrics shows the pauses."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, observed, wait_until  # noqa: E402


class Backpressure(clusterh.ClusterTestCase):
    def test_paused_follower_catches_up(self):
        c = self.cluster
        leader = c.leader()
        slow = c.followers(leader)[0]
        slow.pause()
        value = "v" * (512 * 1024)
        for k in range(40):
            r = leader.request(ns.PUT_KV_CONFIG, {"namespace": "bp", "key": "k%d" % k,
                                                  "value": value}, timeout=T(20.0))
            self.assertEqual(r.code, 0, r)
        def paused():
            n = leader.metric("raftns_peer_backpressure_total")
            return observed(n > 0, "raftns_peer_backpressure_total %d" % n)
        wait_until(paused, T(20.0), "the leader's relay to the paused follower to pause")
        slow.resume()
        c.wait_converged(timeout=T(60.0))
        r = slow.request(ns.GET_KV_CONFIG, {"namespace": "bp", "key": "k39"})
        self.assertEqual((r.code, len((r.ext or {}).get("value", ""))), (0, len(value)))
        for nd in c.all():
            self.assertEqual(nd.metric("raftns_peer_violations_total"), 0)


if __name__ == "__main__":
    clusterh.main()
