"""Checkpoint digests taken in steps (docs/divergence.md §1) on three real nodes: with more
topics than one step encodes, registrations keep changing topics between the steps of each
capture, and every node's captured digest must equal the digest of its whole state computed at
the capture's beginning (the RAFTNS_TEST_CHECK_CAPTURES test hook computes both and logs the
comparison). The nodes must also agree with each other: no node is ever judged diverged."""

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
TOPICS = 3000          # per broker: 12,000 topics, three steps of 4,096 (raft/node/node_int.h)
CHANGED = 40           # topics whose queue counts each registration changes
MATCH = re.compile(r"the digest captured in (\d+) loop turns while (\d+) entries applied, "
                   r"[0-9a-f]+, matches")
DIFFERS = "DIFFERS FROM"


class CaptureDigest(clusterh.ClusterTestCase):
    EXTRA_ARGS = ("--checkpoint-entries", "5", "--checkpoint-ms", "300",
                  "--log-level", "info")

    def setUp(self):
        os.environ["RAFTNS_TEST_CHECK_CAPTURES"] = "1"
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
        """Captures of two or more loop turns with entries applied between their steps, whose
        digest matched the state's at their beginning."""
        return [m.groups() for m in MATCH.finditer(nd.log_text())
                if int(m.group(1)) >= 2 and int(m.group(2)) >= 1]

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
            wait_until(lambda: errors or any(DIFFERS in nd.log_text()
                                             for nd in self.cluster.all())
                       or all(self.interleaved_matches(nd) for nd in self.cluster.all()),
                       T(90.0), "on every node, a capture of two or more loop turns with "
                       "entries applied during it, whose digest matched")
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
