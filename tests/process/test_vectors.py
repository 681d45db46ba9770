"""Replays the frames recorded from a real Java 4.9.8 name server (NS_VECTORS_DIR) in order on
one connection against a fresh raftns and compares every reply as data, after removing the
documented 5.x differences (server version, FAQ link, code 3 for unknown codes, the 5.x
single-topic register guard). The recorded requests come from 4.9 clients (version < 413), so
their route and cluster replies must have exactly Java 4.9.8's fields (no enableActingMaster).
It does not test anything the recording does not show; test_acceptance.py covers the rest."""

import glob
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T  # noqa: E402

VECTORS = os.environ.get("NS_VECTORS_DIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "vectors", "java-4.9.8"))


def load_steps():
    steps = []
    for req in sorted(glob.glob(os.path.join(VECTORS, "*.req.bin"))):
        stem = req[:-len(".req.bin")]
        resp = stem + ".resp.bin"
        with open(req, "rb") as f:
            rq = f.read()
        rs = None
        if os.path.exists(resp):
            with open(resp, "rb") as f:
                rs = f.read()
        steps.append((os.path.basename(stem), rq, rs))
    return steps


def canon(obj):
    """Data with every list sorted (set/array order carries no meaning)."""
    if isinstance(obj, dict):
        return {k: canon(v) for k, v in obj.items()}
    if isinstance(obj, list):
        items = [canon(v) for v in obj]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    return obj


def norm_header(h):
    h = dict(h)
    h.pop("version", None)
    if isinstance(h.get("remark"), str):
        h["remark"] = h["remark"].replace(ns.FAQ_49, ns.FAQ_5X)
    return h


def compare(expected_frame, actual):
    """Returns a list of differences between a recorded reply frame and a Reply."""
    exp = ns.decode_frame(expected_frame[4:])
    diffs = []
    if actual.ser != exp.ser:
        diffs.append("serialize type: expected %d, got %d" % (exp.ser, actual.ser))
    eh, ah = norm_header(exp.header), norm_header(actual.header)
    if eh != ah:
        diffs.append("header: expected %s, got %s" % (json.dumps(eh, sort_keys=True),
                                                      json.dumps(ah, sort_keys=True)))
    if actual.version != 479:
        diffs.append("server version: expected 479, got %r" % actual.version)
    if bool(exp.body) != bool(actual.body):
        diffs.append("body presence: expected %r, got %r" % (exp.body, actual.body))
    elif exp.body:
        try:
            got = canon(ns.loads_tolerant(actual.body))
        except ValueError as e:
            diffs.append("body does not parse (%s): %r" % (e, actual.body))
            return diffs
        want = canon(ns.loads_tolerant(exp.body))
        if got != want:
            diffs.append("body: expected %s, got %s" % (json.dumps(want, sort_keys=True),
                                                        json.dumps(got, sort_keys=True)))
        for name, fn in (("bare {0:", ns.has_bare_int_keys),
                         ('quoted {"0":', ns.has_quoted_int_keys)):
            if fn(exp.body) != fn(actual.body):
                diffs.append("key quoting (%s) expected %r got %r; raw body %r" %
                             (name, fn(exp.body), fn(actual.body), actual.body))
    return diffs


class VectorReplay(harness.NodeTestCase):
    def test_replay_java_4_9_8(self):
        steps = load_steps()
        self.assertEqual(len(steps), 28, "expected 28 recorded steps in %s" % VECTORS)
        c = self.conn(timeout=T(5))
        unregistered = False
        for name, req, resp in steps:
            with self.subTest(step=name):
                if resp is None:
                    self._unknown_code(c, name, req)
                    continue
                exp = ns.decode_frame(resp[4:])
                c.send_raw(req)
                r = c.wait_reply(exp.opaque, T(5))
                self.assertIsNotNone(r, harness.expired("%s: the reply" % name, T(5), None))
                diffs = compare(resp, r)
                if diffs and name.startswith("03_") and r.code == 1 and \
                        r.remark == "register broker failed":
                    # 5.x single-topic guard (docs/protocol.md §5.2 step 7): a first registration
                    # with exactly one topic is refused. Make broker-a known with an empty
                    # registration of the same DataVersion, then the recorded request must
                    # give the recorded reply.
                    body = ns.wrapper_body([], ns.data_version(1, 1700000000000, v5=False))
                    body = ns.dumps_java({"filterServerList": [], "topicConfigSerializeWrapper":
                                          ns.loads_tolerant(body)}).encode()
                    rr = c.request(ns.REGISTER_BROKER, ns.register_ext(
                        "broker-a", 0, "127.0.0.1:10911", "127.0.0.1:10912", "DefaultCluster",
                        body, acting=None), body, version=409, timeout=T(5))
                    self.assertEqual(rr.code, 0, "repair registration: %r" % rr)
                    c.send_raw(req)
                    r = c.wait_reply(exp.opaque, T(5))
                    self.assertIsNotNone(r, harness.expired("%s (resent): the reply" % name,
                                                            T(5), None))
                    diffs = compare(resp, r)
                if name.split("_", 1)[0] in ("21", "22", "25"):
                    unregistered = True
                if diffs and unregistered and exp.header.get("code") is not None and \
                        name.split("_", 1)[0] in ("26", "27"):
                    # 5.x unregister is acknowledged before it is applied: poll up to T(5).
                    deadline = time.monotonic() + T(5)
                    while diffs and time.monotonic() < deadline:
                        time.sleep(0.1)
                        c.send_raw(req)
                        r = c.wait_reply(exp.opaque, T(5))
                        self.assertIsNotNone(r, harness.expired(
                            "%s (poll): the reply" % name, T(5), None))
                        diffs = compare(resp, r)
                self.assertFalse(diffs, "%s: request %r\n  %s" % (
                    name, req[8:], "\n  ".join(diffs)))

    def _unknown_code(self, c, name, req):
        # Java 4.9.8 stays silent; raftns answers like 5.x (docs/protocol.md §2.7).
        c.send_raw(req)
        r = c.wait_reply(24, T(3))
        self.assertIsNotNone(r, harness.expired("%s: a code 3 reply" % name, T(3), None))
        self.assertEqual((r.code, r.remark, r.flag, r.opaque, r.ser),
                         (3, " request type 9999 not supported", 1, 24, 0),
                         "%s: %r" % (name, r))


if __name__ == "__main__":
    harness.main()
