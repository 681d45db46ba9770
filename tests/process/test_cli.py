"""The raftns command-line contract seen from outside: --set values are visible in
GET_NAMESRV_CONFIG, SIGTERM exits 0 promptly even with clients connected and requests in
flight, and a client port that is already taken makes raftns fail cleanly (non-zero exit, no
sanitizer report) instead of hanging. Protocol behaviour is in test_acceptance.py."""

import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T  # noqa: E402


class Cli(harness.NodeTestCase):
    node_sets = {"orderMessageEnable": "true", "scanNotActiveBrokerInterval": "2500",
                 "enableTopicList": "false"}

    def test_set_values_visible(self):
        with ns.Conn(self.node.addr) as c:
            r = c.request(ns.GET_NAMESRV_CONFIG, timeout=T(5))
            self.assertEqual(r.code, 0)
            cfg = ns.parse_properties(r.body)
            for k, v in self.node_sets.items():
                self.assertEqual(cfg.get(k), v, "--set %s=%s not visible in 319" % (k, v))
            r = c.request(ns.GET_TOPICS_BY_CLUSTER, {"cluster": "c1"}, timeout=T(5))
            self.assertEqual((r.code, r.remark), (1, "disable"))

    def test_sigterm_with_clients_connected(self):
        idle = [ns.Conn(self.node.addr) for _ in range(20)]
        busy = ns.Conn(self.node.addr)
        try:
            reqs = [dict(code=ns.PUT_KV_CONFIG, ext={"namespace": "n", "key": "k%d" % i,
                                                     "value": "v"}) for i in range(200)]
            frames = b"".join(ns.build_request(rq["code"], rq["ext"], opaque=i + 1)
                              for i, rq in enumerate(reqs))
            busy.send_raw(frames)
            t0 = time.monotonic()
            self.assertEqual(self.node.stop(timeout=T(10)), 0)
            took = time.monotonic() - t0
            self.assertLess(took, T(5), harness.expired("exit after SIGTERM", T(5),
                                                        "exited after %.1fs" % took))
            for c in idle:
                harness.assert_closed(c, T(2), "client connection closed after exit")
        finally:
            for c in idle + [busy]:
                c.close()
        self.node.start()
        with ns.Conn(self.node.addr) as c:
            self.assertEqual(c.request(ns.GET_BROKER_CLUSTER_INFO).code, 0)


class PortTaken(harness.NodeTestCase):
    START = False

    def test_client_port_in_use(self):
        node = self.new_node(start=False)
        blocker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind(node.addr)
        blocker.listen(1)
        try:
            node.start(wait=False)
            try:
                rc = node.proc.wait(T(10))
            except Exception:  # noqa: BLE001 - reported as a failure below
                rc = None
            self.assertIsNotNone(rc, harness.expired("raftns exits: its client port is taken",
                                                     T(10), "still running"))
            self.assertNotEqual(rc, 0, "raftns exited 0 although its client port is taken")
            node.assert_clean_log()
            node.cleanup(check=False)  # its non-zero exit is the expected outcome here
        finally:
            blocker.close()


if __name__ == "__main__":
    harness.main()
