"""raft_uv closes a full log segment's kernel AIO context with io_destroy, which waits in the
kernel for an RCU grace period: 29-50 ms per closed segment, and libraft calls it on the event
loop (docs/raft-0.15.md §15). raftns hands those calls to a reaper thread
(raft/node/node_aio.c). Registrations fill a few 8 MiB segments here; then the metric must count
deferred destroys and, where strace can attach, no io_destroy may run on the loop thread (the
process's main thread: its thread id is the pid).

raft_uv also first tries each segment write without blocking on the loop thread, which on a
preallocated segment nearly always comes back "would block" for a write into new blocks
(docs/raft-0.15.md §21): while most tries are refused, raftns sends all but one write in 8 to
the thread pool at once. Registrations of 10 KB write new blocks each time: the tries must be
refused, writes pooled, and (with strace) the loop thread's io_submits at most half as many as
the pooled writes."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
from clusterh import T  # noqa: E402

TOPICS = 400  # ~10 KB of command per registration: an 8 MiB segment in ~800
NAMES = harness.unshared_names("T", TOPICS)
DEFERRED = re.compile(rb"^raftns_raft_aio_destroys_deferred_total (\d+)$", re.M)
POOLED = re.compile(rb"^raftns_raft_aio_writes_pooled_total (\d+)$", re.M)
REFUSED = re.compile(rb"^raftns_raft_aio_tries_refused_total (\d+)$", re.M)


class SegmentClose(unittest.TestCase):
    def setUp(self):
        why = clusterh.config_unsupported()
        if why:
            raise unittest.SkipTest(why)
        self.cluster = clusterh.Cluster(1)
        self.addCleanup(self.cluster.cleanup)
        self.cluster.start()
        self.tmp = tempfile.mkdtemp(prefix="raftns-segclose-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def counter(self, nd, metric):
        status, body = nd.http_get("/metrics")
        self.assertEqual(status, 200, body)
        m = metric.search(body)
        self.assertIsNotNone(m, "no %s in /metrics" % metric.pattern)
        return int(m.group(1))

    def register_until(self, nd, metric, at_least):
        """Registers changed bodies until metric reaches at_least."""
        broker = clusterh.Broker(topics=NAMES)
        deadline = time.monotonic() + T(120.0)
        sent = 0
        while self.counter(nd, metric) < at_least:
            self.assertLess(time.monotonic(), deadline, "%s below %d after %d registrations"
                            % (metric.pattern, at_least, sent))
            for _ in range(100):
                broker.counter += 1
                r = broker.register(nd)
                self.assertEqual(r.code, 0, r)
                sent += 1
        broker.close()

    def traced_calls(self, tracer, trace_path, name):
        tracer.terminate()
        tracer.wait(timeout=T(10.0))
        with open(trace_path) as f:
            calls = [line for line in f if name + "(" in line]
        self.assertTrue(calls, "strace saw no %s at all" % name)
        return calls

    def attach_strace(self, pid, call):
        """An strace of every thread's call, or None where strace cannot attach."""
        if shutil.which("strace") is None:
            return None, None
        out = os.path.join(self.tmp, "strace.txt")
        p = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=" + call, "-o", out,
                              "-p", str(pid)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))
        deadline = time.monotonic() + T(5.0)
        while time.monotonic() < deadline:  # attached: strace has written its file
            if p.poll() is not None:
                return None, None  # no ptrace here (container, yama)
            if os.path.exists(out):
                return p, out
            time.sleep(0.02)
        return p, out

    def test_closed_segments_are_destroyed_off_the_loop(self):
        nd = self.cluster.leader()
        tracer, trace_path = self.attach_strace(nd.pid, "io_destroy")
        self.register_until(nd, DEFERRED, 2)
        if tracer is None:
            return
        calls = self.traced_calls(tracer, trace_path, "io_destroy")
        on_loop = [line for line in calls if line.split()[0] == str(nd.pid)]
        self.assertEqual(on_loop, [], "io_destroy ran on the loop thread")

    def test_segment_writes_go_to_the_pool_at_once(self):
        nd = self.cluster.leader()
        if not direct_io_works(nd.data_dir):
            self.skipTest("no O_DIRECT in %s: raft_uv writes only from its pool" % nd.data_dir)
        tracer, trace_path = self.attach_strace(nd.pid, "io_submit")
        self.register_until(nd, POOLED, 200)
        self.assertGreater(self.counter(nd, REFUSED), 0, "no try was refused")
        if tracer is None:
            return
        pooled = self.counter(nd, POOLED)
        calls = self.traced_calls(tracer, trace_path, "io_submit")
        on_loop = [line for line in calls if line.split()[0] == str(nd.pid)]
        self.assertLessEqual(len(on_loop), pooled // 2,
                             "%d io_submit on the loop thread against %d pooled writes"
                             % (len(on_loop), pooled))


def direct_io_works(directory):
    path = os.path.join(directory, ".direct-probe")
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600))
        return True
    except OSError:
        return False
    finally:
        if os.path.exists(path):
            os.unlink(path)


if __name__ == "__main__":
    clusterh.main()
