"""Checkpoint digests and snapshots taken in steps (docs/divergence.md §1,
raft/node/node_snapcap.c) on three real nodes: with many more topics than one step encodes (the
test hook makes the steps small),
registrations keep changing topics between the steps of each capture, and every node's captured
digest and snapshot bytes must hash to the digest of its whole state computed at the capture's
beginning (the RAFTNS_TEST_CHECK_CAPTURES test hook computes both and logs the comparison). The
nodes must also agree with each other: no node is ever judged diverged."""

import os
import re
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, wait_until  # noqa: E402

BROKERS = 4
TOPICS = 500           # per broker: 2,000 topics, 16 steps of 128 (STEP)
STEP = 128             # topics per step (the test hook's; 4,096 by default: raft/node/node_int.h)
CHANGED = 25           # topics whose queue counts each registration changes
MATCH = re.compile(r"the (digest|snapshot) captured in (\d+) loop turns while (\d+) entries "
                   r"applied, [0-9a-f]+, matches")
DIFFERS = "DIFFERS FROM"


class Seen(dict):
    """An observation that reads well in a deadline's message and is true only when done."""
    done = False

    def __bool__(self):
        return self.done


class CaptureDigest(clusterh.ClusterTestCase):
    EXTRA_ARGS = ("--checkpoint-entries", "5", "--checkpoint-ms", "300",
                  "--snapshot-threshold", "8", "--log-level", "info")

    def setUp(self):
        os.environ["RAFTNS_TEST_CHECK_CAPTURES"] = str(STEP)
        try:
            super().setUp()
        finally:
            del os.environ["RAFTNS_TEST_CHECK_CAPTURES"]

    def topics(self, b, round_no):
        """Broker b's topics; a window of CHANGED of them, spread over the names, gets new queue
        counts each round, so changes land ahead of and behind a capture's steps."""
        out = []
        for t in range(TOPICS):
            q = 4 + (round_no % 4 if t % (TOPICS // CHANGED) == 0 else 0)
            out.append(ns.topic_config("Cap%d-%05d" % (b, t), read=q, write=q))
        return out

    def interleaved_matches(self, nd):
        """What nd captured (digest, snapshot) in two or more loop turns with entries applied
        between the steps, matching the state at the capture's beginning."""
        return {m.group(1) for m in MATCH.finditer(nd.log_text())
                if int(m.group(2)) >= 2 and int(m.group(3)) >= 1}

    def differs(self):
        return [nd.id for nd in self.cluster.all() if DIFFERS in nd.log_text()]

    def captured(self):
        """Per node, what it captured as interleaved_matches says; true once every node
        captured both."""
        seen = Seen((nd.id, sorted(self.interleaved_matches(nd))) for nd in self.cluster.all())
        seen.done = all(v == ["digest", "snapshot"] for v in seen.values())
        return seen

    def test_captured_digests_are_the_state_at_their_beginning(self):
        leader = self.cluster.leader()
        for b in range(BROKERS):
            self.broker(name="cap-%d" % b, addr="127.0.0.1:%d" % (20911 + 10 * b))
        stop = threading.Event()
        errors = []

        def writer(b, br):
            """Broker b re-registers without pause, each time with other queue counts on a
            window of topics spread over its names, so that changes land between the steps
            of a capture, ahead of and behind them."""
            round_no = 0
            try:
                while not stop.is_set():
                    round_no += 1
                    br.topics = self.topics(b, round_no)
                    br.counter += 1
                    r = br.register(leader, timeout=T(20.0))
                    if r.code != 0:
                        errors.append(r)
                        return
            except Exception as e:  # noqa: BLE001 (reported by the test thread)
                errors.append(e)

        threads = [threading.Thread(target=writer, args=(b, br))
                   for b, br in enumerate(self.brokers)]
        for t in threads:
            t.start()
        try:
            wait_until(lambda: errors or self.differs() or self.captured(),
                       T(90.0), "on every node, a digest and a snapshot captured in two or "
                       "more loop turns with entries applied during them, matching")
        finally:
            stop.set()
            for t in threads:
                t.join()
        for nd in self.cluster.all():
            self.assertNotIn(DIFFERS, nd.log_text(), "node %d: %s" % (nd.id, nd.log_tail()))
        self.assertEqual(errors, [])
        for nd in self.cluster.all():
            st = nd.status()
            self.assertFalse(st["diverged"], st)
            self.assertEqual((st.get("divergence") or {}).get("times_diverged", 0), 0, st)


if __name__ == "__main__":
    unittest.main()
