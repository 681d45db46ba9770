"""The decoded-registration memo (src/gateway/register_memo.c) against one running raftns: a
re-registration with the same bytes as a remembered one is answered from the memo, but a body
or header that differs in any way, or a route that changed since, must take effect exactly as
without the memo. Sequences of registrations are checked through GET_ROUTEINFO_BY_TOPIC."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import nsclient as ns  # noqa: E402

ADDR = "127.0.0.1:10911"


class RegisterMemoTest(harness.NodeTestCase):
    def body(self, perm, counter=1, extra=()):
        topics = [ns.topic_config("MemoT1", perm=perm), ns.topic_config("MemoT2")]
        topics += [ns.topic_config(t) for t in extra]
        return ns.register_body(topics, dv=ns.data_version(counter=counter))

    def register(self, c, body, addr=ADDR, crc=None):
        r = c.request(ns.REGISTER_BROKER, ns.register_ext(addr=addr, body=body, crc=crc),
                      body=body)
        return r

    def route(self, c, topic="MemoT1"):
        r = c.request(ns.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        if r.code != 0:
            return None
        return r.body_json()

    def perm_and_addr(self, c):
        rt = self.route(c)
        self.assertIsNotNone(rt)
        perm = [q["perm"] for q in rt["queueDatas"] if q["brokerName"] == "broker-a"]
        addrs = [b["brokerAddrs"] for b in rt["brokerDatas"] if b["brokerName"] == "broker-a"]
        return perm[0], str(addrs[0].get("0", addrs[0].get(0)))

    def test_changed_body_or_header_is_never_skipped(self):
        c = self.conn()
        a = self.body(perm=6)
        b = self.body(perm=4, counter=2)  # one topic's perm and the DataVersion differ
        for _ in range(3):  # change, then unchanged (remembered), then a memo hit
            self.assertEqual(self.register(c, a).code, 0)
        self.assertEqual(self.perm_and_addr(c), (6, ADDR))

        self.assertEqual(self.register(c, b).code, 0)
        self.assertEqual(self.perm_and_addr(c), (4, ADDR))
        # a's bytes are remembered, but the route now holds b: a must apply again
        self.assertEqual(self.register(c, a).code, 0)
        self.assertEqual(self.perm_and_addr(c), (6, ADDR))
        self.assertEqual(self.register(c, a).code, 0)
        self.assertEqual(self.perm_and_addr(c), (6, ADDR))

        # the same body under another broker address (a header field)
        other = "127.0.0.1:10999"
        self.assertEqual(self.register(c, a, addr=other).code, 0)
        self.assertEqual(self.perm_and_addr(c), (6, other))
        self.assertEqual(self.register(c, a).code, 0)
        self.assertEqual(self.perm_and_addr(c), (6, ADDR))

        # the same body with a wrong CRC is still refused
        r = self.register(c, a, crc=12345)
        self.assertNotEqual(r.code, 0)
        self.assertIn("crc32", r.remark or "")

        # a body that differs only by an added topic
        self.assertEqual(self.register(c, self.body(6, counter=3, extra=["MemoT3"])).code, 0)
        self.assertIsNotNone(self.route(c, "MemoT3"))
        self.assertEqual(self.register(c, a).code, 0)
        self.assertEqual(self.register(c, a).code, 0)
        # deleteTopicWithBrokerRegistration is off: MemoT3 stays, as without the memo
        self.assertIsNotNone(self.route(c, "MemoT3"))

    def test_unregistered_broker_registers_again(self):
        c = self.conn()
        a = self.body(perm=6)
        for _ in range(3):
            self.assertEqual(self.register(c, a).code, 0)
        r = c.request(ns.UNREGISTER_BROKER, {"brokerName": "broker-a", "brokerAddr": ADDR,
                                             "clusterName": "c1", "brokerId": "0"})
        self.assertEqual(r.code, 0)
        self.assertIsNone(self.route(c))
        self.assertEqual(self.register(c, a).code, 0)  # remembered bytes, empty route
        self.assertEqual(self.perm_and_addr(c), (6, ADDR))


if __name__ == "__main__":
    harness.main()
