"""Leader de-duplication (issue 3 item 2): the identical REGISTER_BROKER (same changed
DataVersion) sent to all three nodes at the same moment makes exactly one raft log entry, and all
three replies are SUCCESS. Checkpoints are pushed out of the way (--checkpoint-entries/-ms) so the
commit index counts only the registrations."""

import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import nsclient as ns  # noqa: E402
from clusterh import T, broker_names, route  # noqa: E402
from harness import Seen, wait_until  # noqa: E402

ROUNDS = 6


def stable_commit(c):
    """The leader's commit index once it stopped moving and every node applied it."""
    def pred():
        idx = {nd.id: (int(st["commit_index"]), int(st["applied_index"]))
               for nd, st in ((nd, nd.status()) for nd in c.all())}
        vals = set(idx.values())
        if len(vals) == 1:
            ci, ai = vals.pop()
            if ci == ai:
                return ci
        return Seen("(commit, applied) per node: %r" % idx)
    return wait_until(pred, T(10.0), "same commit and applied index on every node")


class Dedup(clusterh.ClusterTestCase):
    EXTRA_ARGS = ("--checkpoint-entries", "1000000", "--checkpoint-ms", "3600000")

    def test_identical_registration_on_three_nodes_is_one_entry(self):
        c = self.cluster
        c.leader()
        b = self.broker(name="broker-d", addr="127.0.0.1:44911", topics=["TopicD1", "TopicD2"])
        conns = {nd.id: nd.conn(timeout=T(10.0)) for nd in c.all()}
        self.addCleanup(lambda: [x.close() for x in conns.values()])
        r = conns[1].request(**b.register_request(), timeout=T(10.0))
        self.assertEqual(r.code, 0, r)
        for rnd in range(ROUNDS):
            before = stable_commit(c)
            b.counter += 1  # a changed DataVersion: a real write
            b.topics.append("TopicD%d" % (rnd + 3))
            rq = b.register_request()
            gate = threading.Barrier(len(conns))
            replies = {}

            def send(node_id, conn):
                gate.wait()
                try:
                    replies[node_id] = conn.request(**rq, timeout=T(10.0))
                except (OSError, ns.ConnectionClosed, TimeoutError) as e:
                    replies[node_id] = e
            threads = [threading.Thread(target=send, args=kv) for kv in conns.items()]
            for t in threads:
                t.start()
            for t in threads:
                t.join(T(20.0))
            for node_id, rp in sorted(replies.items()):
                self.assertIsInstance(rp, ns.Reply, "node %d: %r" % (node_id, rp))
                self.assertEqual(rp.code, 0, "node %d: %r" % (node_id, rp))
            self.assertEqual(len(replies), 3)
            after = stable_commit(c)
            self.assertEqual(after - before, 1, "round %d: %d entries for one registration"
                             % (rnd, after - before))
            topic = "TopicD%d" % (rnd + 3)
            for nd in c.all():  # each node answered after applying it
                self.assertEqual(broker_names(route(nd, topic)), ["broker-d"])
        c.wait_converged()


if __name__ == "__main__":
    clusterh.main()
