"""KV codes answered as the Java name server answers them (issue 9 item 1, the KV class):
GET_KV_CONFIG for a missing key carries "extFields":{} in its JSON header as Java's reply does,
and DELETE_KV_CONFIG without a namespace or key is answered 0 (Java removes a null key, which
changes nothing) and writes nothing."""

import json

import harness
import nsclient as ns


class KvCompat(harness.NodeTestCase):
    def test_get_miss_carries_empty_ext_fields(self):
        nd = self.new_node()
        with self.conn(nd) as c:
            r = c.request(ns.GET_KV_CONFIG, {"namespace": "n", "key": "missing"})
        self.assertEqual(r.code, 22)
        self.assertEqual(r.remark, "No config item, Namespace: n Key: missing")
        header = json.loads(r.raw_header)
        self.assertEqual(header.get("extFields"), {})

    def test_delete_without_namespace_or_key_is_a_no_op_answered_0(self):
        nd = self.new_node()
        with self.conn(nd) as c:
            self.assertEqual(c.request(ns.PUT_KV_CONFIG, {"namespace": "n", "key": "k",
                                                          "value": "v"}).code, 0)
            for ext in ({"namespace": "n"}, {"key": "k"}, {}):
                r = c.request(ns.DELETE_KV_CONFIG, ext)
                self.assertEqual((r.code, r.remark), (0, None), ext)
            r = c.request(ns.GET_KV_CONFIG, {"namespace": "n", "key": "k"})
            self.assertEqual((r.code, r.ext.get("value")), (0, "v"))


if __name__ == "__main__":
    harness.main()
