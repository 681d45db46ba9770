"""Java 4.9.8 answers, field by field (issue 9 item 1). A table walks every request code raftns
serves x every ext field the Java handler reads x {missing, empty, wrong type, out of range,
huge}, plus header-level cases (int fields out of range or fractional, enums, NUL and control
bytes, null ext values, extFields of the wrong type) and body-level cases (DataVersion counters
beyond 2^53, Long.MAX, -1, 1e308, "abc"), and checks each answer against the expected Java answer:
code, remark, extFields presence, reply type, or the connection closed without a reply.

Each row names the Java reason. The expectations were derived from the 4.9.8 sources
(RemotingCommand.decodeCommandCustomHeader, DefaultRequestProcessor, RouteInfoManager,
NettyDecoder, NettyRemotingAbstract) and from fastjson 1.2.69 run on the same header texts; see
docs/compat.md. Rows where raftns deliberately differs carry `diff=<id>`: the answer checked is
raftns's documented one and docs/compat.md must name that id. Run with COMPAT_VERBOSE=1 to
print every row."""

import json
import os
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T  # noqa: E402

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "compat.md")

NPE = "java.lang.NullPointerException"
NPE_REG = NPE + (", org.apache.rocketmq.namesrv.processor.DefaultRequestProcessor."
                 "registerBrokerWithFilterServer(DefaultRequestProcessor.java:252)")
NPE_UNREG = NPE + (", org.apache.rocketmq.namesrv.processor.DefaultRequestProcessor."
                   "unregisterBroker(DefaultRequestProcessor.java:359)")
BAD_BODY = ("org.apache.rocketmq.remoting.exception.RemotingCommandException: Failed to decode "
            "RegisterBrokerBody, org.apache.rocketmq.namesrv.processor.DefaultRequestProcessor."
            "registerBrokerWithFilterServer(DefaultRequestProcessor.java:241)")
NO_ROUTE = "No topic route info in name server for the topic: "
BIG = "x" * 20000
LONG_MAX = 9223372036854775807
P53 = 2 ** 53


class Raw(str):
    """An ext or header value written into the JSON text as is (a number, null, an object)."""


def jtext(v):
    if isinstance(v, Raw):
        return str(v)
    return json.dumps(v, ensure_ascii=False)


def header(code=106, ext=None, opaque=1, flag=0, version=409, extra=None):
    """A JSON header in Java's property order; every value given as Raw text or a Python
    value (strings are quoted); ext None leaves extFields out, ext Raw is written as is."""
    parts = [("code", code if isinstance(code, Raw) else Raw(str(code)))]
    if ext is not None:
        if isinstance(ext, Raw):
            parts.append(("extFields", ext))
        else:
            parts.append(("extFields", Raw("{" + ",".join(
                "%s:%s" % (json.dumps(k), jtext(v)) for k, v in ext.items()) + "}")))
    parts += [("flag", flag if isinstance(flag, Raw) else Raw(str(flag))),
              ("language", Raw('"JAVA"')),
              ("opaque", opaque if isinstance(opaque, Raw) else Raw(str(opaque))),
              ("serializeTypeCurrentRPC", Raw('"JSON"')),
              ("version", version if isinstance(version, Raw) else Raw(str(version)))]
    for k, v in (extra or {}).items():
        parts.append((k, v))
    return ("{" + ",".join("%s:%s" % (json.dumps(k), v) for k, v in parts) + "}").encode()


def frame(h, body=b"", ser=ns.SER_JSON):
    return struct.pack(">II", 4 + len(h) + len(body), (ser << 24) | len(h)) + h + body


def dv_body(counter, timestamp=1700000000000):
    return ('{"counter":%s,"timestamp":%s}' % (counter, timestamp)).encode()


def reg_ext(name, broker_id="0", **over):
    ext = {"brokerName": name, "brokerAddr": "10.0.0.%d:10911" % (zlib.crc32(name.encode()) % 250 + 1),
           "clusterName": "cc", "haServerAddr": "10.0.0.1:10912", "brokerId": broker_id}
    if broker_id is None:
        del ext["brokerId"]
    for k, v in over.items():
        if v is None:
            ext.pop(k, None)
        else:
            ext[k] = v
    return ext


def reg_body(counter=1, timestamp=1700000000000):
    return ('{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":'
            '{"counter":%s,"timestamp":%s},"topicConfigTable":{}}}' % (counter, timestamp)
            ).encode()


class Row:
    """One request and the answer Java gives. expect: ("reply", code), ("closed",) or
    ("silent",). remark: exact text, or a callable on the remark. ext: True/False = extFields
    present or not; a dict = these ext values. check: callable(reply) -> None or a complaint.
    setup: frames sent first on their own connection, each must answer code 0."""

    def __init__(self, name, req, expect, why, remark=None, ext=None, check=None, setup=(),
                 opaque=1, ser=None, diff=None):
        self.name, self.req, self.expect, self.why = name, req, expect, why
        self.remark, self.ext, self.check, self.setup = remark, ext, check, setup
        self.opaque, self.ser, self.diff = opaque, ser, diff


def R(code):
    return ("reply", code)


CLOSED = ("closed",)
SILENT = ("silent",)


def prefix(p):
    return lambda r: r is not None and r.startswith(p)


def route_remark(topic):
    return prefix(NO_ROUTE + topic + "\n")


def has_ext_value(key, value):
    def f(r):
        got = (r.ext or {}).get(key)
        return None if got == value else "ext %s=%r, want %r" % (key, got, value)
    return f


def body_counter(want):
    def f(r):
        text = r.body.decode()
        return None if ('"counter":%d' % want) in text else "body %r lacks counter %d" % (
            text, want)
    return f


def string_field_rows(code, fields, ok, missing, why_missing, ext_base=None, ok_ext=None,
                      per_field=None):
    """missing / empty / number / huge / null for string fields of a handler. ok: the Row
    kwargs for an accepted request; missing: kwargs when the field is absent (or null)."""
    rows = []
    for f in fields:
        base = dict(ext_base or {})
        mk = lambda v, f=f, base=base: frame(header(code, dict(base, **{f: v})))  # noqa: E731
        miss = dict(base)
        miss.pop(f, None)
        m = (per_field or {}).get(f, missing)
        rows.append(Row("%d %s missing" % (code, f), frame(header(code, miss)), why=why_missing,
                        **m))
        rows.append(Row("%d %s null" % (code, f), mk(Raw("null")),
                        why="a JSON null map value is a null field, as missing", **m))
        rows.append(Row("%d %s empty" % (code, f), mk(""), why="String field: taken as is",
                        **ok(f, "")))
        rows.append(Row("%d %s number" % (code, f), mk(Raw("12")),
                        why="fastjson stores the integer's text in the String map", **ok(f, "12")))
        rows.append(Row("%d %s huge" % (code, f), mk(BIG), why="no length limit on String fields",
                        **ok(f, BIG)))
    return rows


def kv_rows():
    rows = []
    ext = {"namespace": "ns1", "key": "k1", "value": "v1"}
    rows += string_field_rows(
        100, ["namespace", "key"], ext_base=ext,
        ok=lambda f, v: dict(expect=R(0), ext=False),
        missing=dict(expect=R(1), remark="namespace or key is null"),
        why_missing="putKVConfig checks namespace and key for null")
    rows.append(Row("100 value missing", frame(header(100, {"namespace": "ns1", "key": "k2"})),
                    R(0), "value is not checked; a null value is stored"))
    rows.append(Row("101 after a put without value", frame(header(101, {"namespace": "nsv",
                                                                         "key": "kv"})),
                    R(22), "the stored value is null: not found",
                    remark="No config item, Namespace: nsv Key: kv", ext=True,
                    setup=[frame(header(100, {"namespace": "nsv", "key": "kv"}))]))
    for f in ("namespace", "key"):
        base = {"namespace": "nsx", "key": "kx"}
        miss = dict(base)
        miss.pop(f)
        want = "No config item, Namespace: %s Key: %s" % (miss.get("namespace", "null"),
                                                          miss.get("key", "null"))
        rows.append(Row("101 %s missing" % f, frame(header(101, miss)), R(22),
                        "lookup with a null name misses; remark prints null",
                        remark=want, ext=True))
        rows.append(Row("101 %s number" % f, frame(header(101, dict(base, **{f: Raw("-0")}))),
                        R(22), "the literal text -0 is the name",
                        remark=lambda r, f=f: r is not None and ("-0" in r), ext=True))
        rows.append(Row("102 %s missing" % f, frame(header(102, miss)), R(0),
                        "deleteKVConfig of a null key changes nothing"))
    rows.insert(0, Row("219 namespace missing", frame(header(219, {})), R(22),
                    "getKVListByNamespace(null) is null", remark="No config item, Namespace: null"))
    rows.insert(1, Row("219 namespace empty", frame(header(219, {"namespace": ""})), R(22),
                       "no such namespace (before the PUT rows create it)",
                       remark="No config item, Namespace: "))
    return rows


def register_rows():
    rows = []
    ok = dict(expect=R(0), ext=True)
    for f in ("brokerName", "brokerAddr", "clusterName", "haServerAddr"):
        name = "reg-s-" + f
        miss = reg_ext(name)
        miss.pop(f)
        rows.append(Row("103 %s missing" % f, frame(header(103, miss)), why=(
            "String field left null; RouteInfoManager takes null keys"), **ok))
        rows.append(Row("103 %s empty" % f, frame(header(103, reg_ext(name + "e", **{f: ""}))),
                        why="String field taken as is", **ok))
        rows.append(Row("103 %s number" % f, frame(header(103, reg_ext(name + "n",
                                                                       **{f: Raw("7")}))),
                        why="the integer's text", **ok))
    npe = dict(expect=R(1), remark=NPE_REG, ext=False)
    for label, v in (("missing", None), ("null", Raw("null")), ("empty", ""), ("abc", "abc"),
                     ("2^63", str(2 ** 63)), ("-2^63-1", str(-2 ** 63 - 1)), ("1.5", "1.5"),
                     ("1e3", "1e3"), ("huge", "9" * 40), ("space", " 0"),
                     ("json float", Raw("1.5")), ("json bool", Raw("true"))):
        ext = reg_ext("reg-id-" + label)
        if v is None:
            del ext["brokerId"]
        else:
            ext["brokerId"] = v
        rows.append(Row("103 brokerId " + label, frame(header(103, ext)), why=(
            "Long.parseLong fails (or no value): brokerId stays null and unboxing it for "
            "registerBroker(long) throws NullPointerException"), **npe))
    for label, v in (("-1", "-1"), ("+1", "+1"), ("Long.MAX", str(LONG_MAX)),
                     ("Arabic-Indic 1", "\u0661"), ("fullwidth 1", "\uff11"),
                     ("json int", Raw("1"))):
        rows.append(Row("103 brokerId " + label, frame(header(103, reg_ext("reg-idok-" + label,
                                                                           broker_id=v))),
                        why="Long.parseLong accepts it", **ok))
    rows.append(Row("103 no extFields", frame(header(103, None)), why=(
        "no extFields: no field is read, brokerId null -> NullPointerException"), **npe))
    rows.append(Row("103 extFields null", frame(header(103, Raw("null"))), why=(
        "extFields null is no extFields"), **npe))
    rows.append(Row("103 extFields empty", frame(header(103, {})), why="all fields null", **npe))
    rows.append(Row("103 version 36 brokerId missing",
                    frame(header(103, reg_ext("reg-old", broker_id=None), version=36)),
                    R(1), "the pre-V3_0_11 registerBroker path unboxes brokerId too",
                    remark=NPE + (", org.apache.rocketmq.namesrv.processor.DefaultRequest"
                                  "Processor.registerBroker(DefaultRequestProcessor.java:332)"),
                    ext=False))
    for label, v in (("abc", "abc"), ("empty", ""), ("TRUE", "TRUE")):
        rows.append(Row("103 compressed " + label, frame(header(103, reg_ext(
            "reg-comp-" + label, compressed=v))), why="Boolean.parseBoolean: only true is true; "
            "no body, nothing to inflate", **ok))
    rows.append(Row("103 bodyCrc32 missing", frame(header(103, reg_ext("reg-crc-m"))),
                    why="Integer default 0: no check", **ok))
    rows.append(Row("103 bodyCrc32 0", frame(header(103, reg_ext("reg-crc-0", bodyCrc32="0"))),
                    why="0 skips the check", **ok))
    rows.append(Row("103 bodyCrc32 wrong", frame(header(103, reg_ext("reg-crc-w",
                                                                     bodyCrc32="5"))),
                    R(1), "checksum compares crc32 & 0x7FFFFFFF", remark="crc32 not match",
                    ext=True))
    for label, v in (("abc", "abc"), ("2^31", str(2 ** 31)), ("1.5", "1.5")):
        rows.append(Row("103 bodyCrc32 " + label, frame(header(103, reg_ext(
            "reg-crc-" + label, bodyCrc32=v))), R(1),
            "Java: Integer.parseInt fails, bodyCrc32 stays 0 and the check is skipped (code 0)",
            remark="crc32 not match", ext=True, diff="crc-unparsable"))
    # bodies
    for label, counter, code in (("-1", "-1", 0), ("Long.MAX", str(LONG_MAX), 0),
                                 ("2^53+1", str(P53 + 1), 0), ("1e308", "1e308", 1),
                                 ("abc", '"abc"', 1), ("2^63", str(2 ** 63), 1),
                                 ("true", "true", 1), ("1.5", "1.5", 0)):
        b = reg_body(counter)
        kw = dict(remark=BAD_BODY, ext=False) if code else dict(ext=True)
        rows.append(Row("103 body counter " + label, frame(header(103, reg_ext(
            "reg-dv-" + label)), b), R(code),
            "fastjson reads the AtomicLong counter (a long: integers must fit; fractions "
            "truncate; strings parse; booleans throw) inside RegisterBrokerBody.decode, "
            "whose exception is rethrown as RemotingCommandException", **kw))
    for label, v, code in (("\"abc\"", '"abc"', 1), ("2^31", str(2 ** 31), 1),
                           ("1.5", "1.5", 0), ("true", "true", 0), ("\"8\"", '"8"', 0),
                           ("[]", "[]", 1)):
        body = ('{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":'
                '{"counter":1,"timestamp":1},"topicConfigTable":{"tq":{"perm":6,'
                '"readQueueNums":%s,"topicName":"tq","writeQueueNums":4}}}}' % v).encode()
        kw = dict(remark=BAD_BODY, ext=False) if code else dict(ext=True)
        rows.append(Row("103 body readQueueNums " + label, frame(header(103, reg_ext(
            "reg-rq-" + label)), body), R(code),
            "an int property: integers must fit, fractions truncate, strings parse, "
            "booleans are 1/0, arrays throw", **kw))
    def tc_body(tc, fs="[]"):
        return ('{"filterServerList":%s,"topicConfigSerializeWrapper":{"dataVersion":'
                '{"counter":1,"timestamp":1},"topicConfigTable":{"tx":%s}}}' % (fs, tc)
                ).encode()
    for label, tc, fs, code in (
            ("order \"abc\"", '{"topicName":"tx","order":"abc"}', "[]", 1),
            ("order \"t\"", '{"topicName":"tx","order":"t"}', "[]", 1),
            ("order \"Y\"", '{"topicName":"tx","order":"Y"}', "[]", 0),
            ("order 2", '{"topicName":"tx","order":2}', "[]", 0),
            ("order {}", '{"topicName":"tx","order":{}}', "[]", 1),
            ("topicFilterType 2", '{"topicName":"tx","topicFilterType":2}', "[]", 1),
            ("topicFilterType \"FOO\"", '{"topicName":"tx","topicFilterType":"FOO"}', "[]", 0),
            ("topicName false", '{"topicName":false}', "[]", 0),
            ("filterServerList [1,null]", '{"topicName":"tx"}', "[1,null]", 0),
            ("filterServerList \"x\"", '{"topicName":"tx"}', '"x"', 0),
            ("filterServerList {}", '{"topicName":"tx"}', "{}", 0),
            ("dataVersion []", '{"topicName":"tx"}', "[]", 0)):
        body = tc_body(tc, fs)
        if label == "dataVersion []":
            body = body.replace(b'{"counter":1,"timestamp":1}', b"[]")
        kw = dict(remark=BAD_BODY, ext=False) if code else dict(ext=True)
        rows.append(Row("103 body " + label, frame(header(103, reg_ext("reg-b-" + label)), body),
                        R(code), "fastjson's reading of the TopicConfig / List<String> property "
                        "(a Java run of the same body)", **kw))
    def compressed(lines, fs):
        out = bytearray()
        for rec in [b'{"counter":1,"timestamp":1}']:
            out += struct.pack(">i", len(rec)) + rec
        out += struct.pack(">i", len(lines))
        for line in lines:
            out += struct.pack(">i", len(line)) + line
        out += struct.pack(">i", len(fs)) + fs
        return zlib.compress(bytes(out))
    rows.append(Row("103 compressed filter list not JSON", frame(header(103, reg_ext(
        "reg-cfs", compressed="true")), compressed([b"ctop 4 4 6 SINGLE_TAG"], b"{x")), R(0),
        "JSON.parseArray's exception is caught: an empty list", ext=True))
    cext = reg_ext("reg-cu8", compressed="true")
    rows.append(Row("105 topic from a compressed line with malformed UTF-8", frame(header(
        105, {"topic": "cu\ufffdx"})), R(0), "the line is new String(bytes, UTF-8): U+FFFD",
        setup=[frame(header(103, cext), compressed([b"cu\xffx 4 4 6 SINGLE_TAG"], b"[]"))]))
    for label, entry in (("topicName missing", '{"perm":6,"readQueueNums":4}'),
                         ("entry null", "null")):
        body = ('{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":'
                '{"counter":1,"timestamp":1},"topicConfigTable":{"tn":%s}}}' % entry).encode()
        rows.append(Row("103 body " + label, frame(header(103, reg_ext("reg-tn-" + label)),
                                                   body), R(0),
                        "decodes; RouteInfoManager files it under a null name or its NPE is "
                        "caught inside registerBroker", ext=True, diff="null-topic"))
    rows.append(Row("103 body timestamp abc", frame(header(103, reg_ext("reg-ts")),
                                                  reg_body(1, '"abc"')),
                    R(1), "timestamp is a long: parseLong error", remark=BAD_BODY, ext=False))
    rows.append(Row("103 compressed body not zlib", frame(header(103, reg_ext(
        "reg-cz", compressed="true")), b"not zlib"), R(1),
        "RegisterBrokerBody.decode(compressed) throws", remark=BAD_BODY, ext=False))
    rows.append(Row("103 version 36 body not json", frame(header(103, reg_ext("reg-oldbad"),
                                                                 version=36), b"{x"), R(1),
                    "TopicConfigSerializeWrapper.decode throws fastjson's exception",
                    remark=prefix("com.alibaba.fastjson.JSONException"), ext=False))
    rows.append(Row("103 body not json", frame(header(103, reg_ext("reg-nj")), b"{x"),
                    R(1), "RegisterBrokerBody.decode throws", remark=BAD_BODY, ext=False))
    rows.append(Row("103 rocketmq header, bad body -> JSON reply",
                    frame(ns.encode_binary_header(103, reg_ext("reg-bin"), version=409),
                          b"{x", ns.SER_ROCKETMQ),
                    R(1), "the catch-all response never copies the request's serialize type",
                    remark=BAD_BODY, ext=False, ser=ns.SER_JSON, opaque=0))
    return rows


def unregister_rows():
    rows = []
    npe = dict(expect=R(1), remark=NPE_UNREG, ext=False)
    base = {"brokerName": "un-a", "brokerAddr": "10.1.0.1:1", "clusterName": "cc",
            "brokerId": "0"}
    for label, v in (("missing", None), ("null", Raw("null")), ("empty", ""), ("abc", "abc"),
                     ("2^63", str(2 ** 63)), ("1.5", "1.5"), ("huge", "9" * 40)):
        ext = dict(base)
        if v is None:
            del ext["brokerId"]
        else:
            ext["brokerId"] = v
        rows.append(Row("104 brokerId " + label, frame(header(104, ext)),
                        why="brokerId null: unboxing for unregisterBroker(long) throws", **npe))
    rows.append(Row("104 no extFields", frame(header(104, None)), why="no field read", **npe))
    rows.append(Row("104 brokerId -1", frame(header(104, dict(base, brokerId="-1"))), R(0),
                    "parses; nothing to remove"))
    for f in ("brokerName", "brokerAddr", "clusterName"):
        ext = dict(base)
        del ext[f]
        rows.append(Row("104 %s missing" % f, frame(header(104, ext)), R(0),
                        "null String: the maps miss, nothing removed"))
        rows.append(Row("104 %s huge" % f, frame(header(104, dict(base, **{f: BIG}))), R(0),
                        "String taken as is"))
    return rows


def query_rows():
    rows = []
    qext = {"brokerName": "qdv-a", "brokerAddr": "10.2.0.1:10911", "clusterName": "cq",
            "brokerId": "0"}

    def setup(counter):
        ext = dict(qext, haServerAddr="10.2.0.1:10912")
        return [frame(header(103, ext), reg_body(counter))]

    def q(body, **over):
        return frame(header(322, dict(qext, **over)), body)

    for label, stored, sent, changed in (
            ("2^53+1 vs 2^53", P53 + 1, P53, "true"),
            ("2^53+1 vs 2^53+1", P53 + 1, P53 + 1, "false"),
            ("Long.MAX vs 0", LONG_MAX, 0, "true"),
            ("Long.MAX vs Long.MAX", LONG_MAX, LONG_MAX, "false"),
            ("-1 vs -1", -1, -1, "false"),
            ("-1 vs 1", -1, 1, "true")):
        rows.append(Row("322 counter " + label, q(dv_body(sent)), R(0),
                        "DataVersion.equals compares the long counters exactly",
                        ext={"changed": changed}, setup=setup(stored),
                        check=body_counter(stored)))
    sv_ext = dict(qext, brokerName="qdv-sv", brokerAddr="10.2.0.9:10911")
    rows.append(Row("322 stateVersion ignored", frame(header(322, sv_ext), (
        '{"counter":3,"stateVersion":2,"timestamp":5}').encode()), R(0),
        "4.9.8's DataVersion has no stateVersion: equals compares counter and timestamp",
        ext={"changed": "false"}, setup=[frame(header(103, dict(
            sv_ext, haServerAddr="x")), reg_body(3, 5).replace(
                b'"counter":3', b'"counter":3,"stateVersion":1'))]))
    rows.append(Row("322 body counter abc remark", q(dv_body('"abc"')), R(1),
                    "fastjson's message names the field",
                    remark=prefix("com.alibaba.fastjson.JSONException: parseLong error, "
                                  "field : counter")))
    for label, body in (("1e308", dv_body("1e308")), ("abc", dv_body('"abc"')),
                        ("2^63", dv_body(str(2 ** 63))), ("true", dv_body("true")),
                        ("object", dv_body("{}")), ("timestamp abc", dv_body(1, '"abc"')),
                        ("not json", b"{x"), ("array [1]", b"[1]"), ("number", b"7")):
        rows.append(Row("322 body " + label, q(body), R(1),
                        "DataVersion.decode (fastjson) throws: SYSTEM_ERROR with its text",
                        remark=prefix("com.alibaba.fastjson.JSONException"), ext=False))
    rows.append(Row("322 no body", q(b""), R(1), "new String(null) throws NullPointerException",
                    remark=prefix(NPE), ext=False))
    for label, body in (("null", b"null"), ("[]", b"[]")):
        rows.append(Row("322 body " + label, q(body), R(0),
                        "fastjson gives a null DataVersion: changed", ext={"changed": "true"}))
    for label, over in (("brokerId missing", {"brokerId": None}),
                        ("brokerId abc", {"brokerId": "abc"}),
                        ("brokerId 2^63", {"brokerId": str(2 ** 63)})):
        ext = dict(qext, **over)
        ext = {k: v for k, v in ext.items() if v is not None}
        rows.append(Row("322 " + label, frame(header(322, ext), dv_body(1)), R(0),
                        "brokerId is decoded but never unboxed by queryBrokerTopicConfig",
                        ext={"changed": "true"}))
    rows.append(Row("322 brokerAddr missing", frame(header(322, {"brokerName": "x"}),
                                                    dv_body(1)),
                    R(0), "a null address is unknown: changed", ext={"changed": "true"}))
    rows.append(Row("322 no extFields", frame(header(322, None), dv_body(1)), R(0),
                    "no field read; unknown broker: changed", ext={"changed": "true"}))
    return rows


def route_rows():
    rows = []
    for label, v, shown in (("empty", "", ""), ("number", Raw("12"), "12"),
                            ("float 1.50", Raw("1.50"), "1.50"), ("1e308", Raw("1e308"),
                                                                 "1E+308"),
                            ("-0", Raw("-0"), "-0"), ("true", Raw("true"), "true"),
                            ("object", Raw("{}"), "{}"), ("null", Raw("null"), "null")):
        rows.append(Row("105 topic " + label, frame(header(105, {"topic": v})), R(17),
                        "fastjson's String of the value is the topic; no route",
                        remark=route_remark(shown)))
    rows.append(Row("105 topic with a malformed UTF-8 byte", frame(header(105, {
        "topic": "T"}).replace(b'"T"', b'"T\xffX"')), R(17),
        "new String(bytes, UTF_8) makes the byte U+FFFD", remark=route_remark("T\ufffdX")))
    rows.append(Row("105 binary topic with a cut UTF-8 sequence", frame(
        ns.encode_binary_header(105, {"topic": "T%%"}, version=409).replace(
            b"T%%", b"T\xe2\x82"), b"", ns.SER_ROCKETMQ),
        R(17), "Netty's readCharSequence(UTF_8): one U+FFFD", remark=route_remark("T\ufffd"),
        opaque=0))
    rows.append(Row("105 topic missing", frame(header(105, {})), R(17),
                    "null topic: no route, remark prints null", remark=route_remark("null")))
    rows.append(Row("105 no extFields", frame(header(105, None)), R(17), "no field read",
                    remark=route_remark("null")))
    rows.append(Row("105 topic huge", frame(header(105, {"topic": BIG})), R(17),
                    "any String", remark=route_remark(BIG)))
    for v in ("abc", "", "1"):
        rows.append(Row("105 acceptStandardJsonOnly %r" % v, frame(header(
            105, {"topic": "nt", "acceptStandardJsonOnly": v})), R(17),
            "Boolean.parseBoolean never fails", remark=route_remark("nt")))
    rows.append(Row("105 topic then topic null", frame(header(105, Raw(
        '{"topic":"a","topic":null}'))), R(17), "the null value replaces \"a\" in the map",
        remark=route_remark("null")))
    ast_ext = reg_ext("ast-b")
    ast_setup = [frame(header(103, ast_ext), (
        '{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,'
        '"timestamp":1},"topicConfigTable":{"ast":{"perm":6,"readQueueNums":4,"topicName":'
        '"ast","writeQueueNums":4}}}}').encode())]
    for v, quoted in (("TRUE", True), ("true", True), ("yes", False), ("1", False)):
        rows.append(Row("105 acceptStandardJsonOnly %r, version 317" % v, frame(header(
            105, {"topic": "ast", "acceptStandardJsonOnly": v}, version=317)), R(0),
            "Boolean.parseBoolean: only true in any case selects standard JSON",
            setup=ast_setup, check=lambda r, q=quoted: None if ns.has_quoted_int_keys(r.body)
            == q else "body %r" % r.body))
    rows.append(Row("105 duplicate topic key", frame(header(105, Raw(
        '{"topic":"a","topic":"b"}'))), R(17), "the map keeps the last value",
        remark=route_remark("b")))
    return rows


def admin_rows():
    rows = []
    for code, key in ((205, "wipeTopicCount"), (327, "addTopicCount")):
        for label, ext in (("brokerName missing", {}), ("brokerName huge", {"brokerName": BIG}),
                           ("no extFields", None), ("brokerName number",
                                                    {"brokerName": Raw("5")})):
            rows.append(Row("%d %s" % (code, label), frame(header(code, ext)), R(0),
                            "unknown broker: 0 topics touched", ext={key: "0"}))
    for label, ext in (("topic missing", {}), ("topic empty", {"topic": ""}),
                       ("clusterName empty", {"topic": "t", "clusterName": ""}),
                       ("clusterName huge", {"topic": "t", "clusterName": BIG}),
                       ("no extFields", None)):
        rows.append(Row("216 " + label, frame(header(216, ext)), R(0),
                        "deleteTopic of an unknown or null topic changes nothing"))
    for label, ext in (("cluster missing", {}), ("cluster huge", {"cluster": BIG}),
                       ("no extFields", None)):
        rows.append(Row("224 " + label, frame(header(224, ext)), R(0),
                        "getTopicsByCluster catches the NPE of an unknown cluster: empty list",
                        check=lambda r: None if json.loads(r.body) == {"topicList": []}
                        else "body %r" % r.body))
    for code in (106, 206, 304, 311, 312, 313, 319):
        for label, ext in (("no extFields", None), ("junk ext", {"x": Raw("1e400"),
                                                                  "y": Raw("null")})):
            rows.append(Row("%d %s" % (code, label), frame(header(code, ext)), R(0),
                            "the handler reads no ext field"))
    rows.append(Row("318 no body", frame(header(318, None)), R(0),
                    "a null body updates nothing"))
    return rows


def header_rows():
    rows = []
    ok = lambda name, h, why, **kw: Row(name, frame(h), R(0), why, **kw)  # noqa: E731
    closed = lambda name, h, why, **kw: Row(name, frame(h), CLOSED, why, **kw)  # noqa: E731
    for field in ("code", "opaque", "flag", "version"):
        kw = {field: Raw(str(2 ** 31))}
        rows.append(closed("header %s 2^31" % field, header(**kw),
                           "fastjson: parseInt error; NettyDecoder closes the channel"))
        kw = {field: Raw(str(-2 ** 31 - 1))}
        rows.append(closed("header %s -2^31-1" % field, header(**kw), "parseInt error"))
        kw = {field: Raw(str(2 ** 40))}
        rows.append(closed("header %s 2^40" % field, header(**kw), "parseInt error"))
        kw = {field: Raw('"abc"')}
        rows.append(closed("header %s \"abc\"" % field, header(**kw), "Integer.parseInt fails"))
        kw = {field: Raw("[]")}
        rows.append(closed("header %s []" % field, header(**kw), "parseInt error"))
        kw = {field: Raw("1e400")}
        rows.append(closed("header %s 1e400" % field, header(**kw),
                           "BigDecimal scale beyond 100: intValueExact throws"))
    rows.append(ok("header code 106.5", header(code=Raw("106.5")),
                   "a fraction is a BigDecimal truncated to 106 (GET_BROKER_CLUSTER_INFO)",
                   check=lambda r: None if b"brokerAddrTable" in r.body else "not cluster info"))
    rows.append(ok("header code 1.06e2", header(code=Raw("1.06e2")), "BigDecimal 106"))
    rows.append(ok("header code \"106\"", header(code=Raw('"106"')), "a numeric string parses"))
    rows.append(ok("header code \"1,06\"", header(code=Raw('"1,06"')),
                   "castToInt drops commas"))
    rows.append(ok("header code \"106.00\"", header(code=Raw('"106.00"')),
                   "castToInt drops a trailing .0*"))
    rows.append(Row("header opaque 7.9", frame(header(opaque=Raw("7.9"))), R(0),
                    "truncated to 7", opaque=7))
    rows.append(Row("header opaque 4294967297.5", frame(header(opaque=Raw("4294967297.5"))),
                    R(0), "BigDecimal.intValue keeps the low 32 bits: 1", opaque=1))
    rows.append(Row("header opaque 1e100", frame(header(opaque=Raw("1e100"))), R(0),
                    "10^100 has 100 trailing zero bits: 0", opaque=0))
    rows.append(Row("header opaque \"-5\"", frame(header(opaque=Raw('"-5"'))), R(0),
                    "numeric string", opaque=-5))
    rows.append(Row("header opaque \"\u0661\u0662\"", frame(header(opaque=Raw(
        '"\u0661\u0662"'))), R(0), "Integer.parseInt reads any script's digits", opaque=12))
    rows.append(Row("header opaque true", frame(header(opaque=Raw("true"))), R(0),
                    "castToInt(true) = 1", opaque=1))
    rows.append(Row("header opaque -2^31", frame(header(opaque=Raw(str(-2 ** 31)))), R(0),
                    "fits", opaque=-2 ** 31))
    rows.append(Row("header flag 1.5", frame(header(flag=Raw("1.5"))), SILENT,
                    "flag 1 marks a response: matched to no request, dropped"))
    rows.append(ok("header version 409.7", header(version=Raw("409.7")), "truncated"))
    for label, v in (("99", "99"), ("13 (NODE_JS, not in 4.9.8)", "13"), ("-1", "-1"),
                     ("1.5", "1.5"), ("true", "true"), ("{}", "{}")):
        rows.append(closed("header language " + label, header(extra={"language": Raw(v)}),
                           "fastjson: parse enum LanguageCode error"))
    for label, v in (("12", "12"), ('"KLINGON"', '"KLINGON"'), ("null", "null")):
        rows.append(ok("header language " + label, header(extra={"language": Raw(v)}),
                       "an ordinal in range, or a name (unknown names are null)"))
    for label, v in (("5", "5"), ("true", "true"), ("1.5", "1.5")):
        rows.append(closed("header serializeTypeCurrentRPC " + label,
                           header(extra={"serializeTypeCurrentRPC": Raw(v)}),
                           "parse enum SerializeType error"))
    rows.append(ok("header serializeTypeCurrentRPC \"FOO\"",
                   header(extra={"serializeTypeCurrentRPC": Raw('"FOO"')}),
                   "unknown name is null; decode overwrites it anyway"))
    for label, v in (("12", "12"), ("{}", "{}"), ("true", "true")):
        rows.append(closed("header body " + label, header(extra={"body": Raw(v)}),
                           "the byte[] body setter throws on a non-base64 value"))
    rows.append(ok("header body null", header(extra={"body": Raw("null")}), "null is fine"))
    for label, v in (("1", "1"), ("{}", "{}"), ("[1]", "[1]"), ("null", "null")):
        rows.append(ok("header remark " + label, header(extra={"remark": Raw(v)}),
                       "a remark of any JSON type is its text"))
    for label, v in (("[]", "[]"), ('"x"', '"x"'), ("1", "1"), ("true", "true")):
        rows.append(closed("header extFields " + label, header(ext=Raw(v)),
                           "HashMap<String,String> from a non-object: syntax error"))
    rows.append(closed("header NUL before a key", header().replace(b',"flag"', b',\0"flag"'),
                       "fastjson: illegal identifier"))
    rows.append(closed("header NUL after {", header().replace(b'{"code"', b'{\0"code"'),
                       "fastjson: illegal identifier"))
    rows.append(closed("header NUL between a key and :", header().replace(
        b'"flag":', b'"flag"\0:'), "fastjson: expect ':'"))
    rows.append(closed("header NUL before an extFields key", header(105, {"topic": "T"}).replace(
        b'{"topic"', b'{\0"topic"'), "fastjson: illegal identifier"))
    for label, old_b, new_b in (("after :", b'"flag":', b'"flag":\0'),
                                ("after a value", b'"flag":0', b'"flag":0\0'),
                                ("leading", b'{"code"', b'\0{"code"'),
                                ("trailing", b'"version":409}', b'"version":409}\0')):
        rows.append(ok("header NUL " + label, header().replace(old_b, new_b),
                       "fastjson steps over a NUL where no key is due"))
    rows.append(closed("header control byte 0x01 between tokens",
                       header().replace(b',"flag"', b',\x01"flag"'),
                       "fastjson skips only blanks, \\f and \\b"))
    rows.append(ok("header \\f between tokens", header().replace(b',"flag"', b',\f"flag"'),
                   "fastjson skips \\f"))
    rows.append(Row("header NUL inside a string", frame(header(105, {"topic": "T\0X"})),
                    CLOSED, "Java keeps the NUL (topic \"T\\0X\", code 17)", diff="nul-string"))
    rows.append(Row("header \\u0000 escape", frame(header(105, {"topic": Raw('"T\\u0000X"')})),
                    CLOSED, "Java keeps the NUL (code 17)", diff="nul-string"))
    for label, raw in (("tab", b"\t"), ("0x01", b"\x01"), ("0x1f", b"\x1f")):
        rows.append(Row("header raw %s inside a string" % label, frame(header(105, {
            "topic": "aQb"}).replace(b"aQb", b"a" + raw + b"b")), R(17),
            "fastjson keeps raw control characters inside strings",
            remark=route_remark("a" + raw.decode() + "b")))
    rows.append(closed("header bare integer key", header(extra={"x": Raw("1")}).replace(
        b'"x":1', b'1:2'), "fastjson: illegal identifier"))
    rows.append(closed("header extFields bare integer key", header(ext=Raw('{1:"x"}')),
                       "a Map<String,String> key must be quoted"))
    rows.append(ok("header bare integer key nested in an unknown field", header(
        extra={"x": Raw("{1:2}")}), "fastjson reads nested maps leniently"))
    rows.append(closed("header trailing garbage", header() + b"x", "not close json text"))
    rows.append(closed("header not an object", b"[1]", "syntax error, expect {"))
    rows.append(Row("header ext value null means missing",
                    frame(header(103, reg_ext("hdr-null", broker_id=Raw("null")))), R(1),
                    "a null map value reads as null: brokerId NPE", remark=NPE_REG, ext=False))
    bin_hdr = lambda code, ext: ns.encode_binary_header(code, ext, version=409)  # noqa: E731
    rows.append(Row("binary topic zero-length", frame(bin_hdr(105, {"topic": ""}), b"",
                                                      ns.SER_ROCKETMQ),
                    R(17), "readStr gives null for length 0: topic null",
                    remark=route_remark("null"), opaque=0))
    rows.append(Row("binary brokerId zero-length", frame(bin_hdr(104, {
        "brokerName": "b", "brokerAddr": "a", "clusterName": "c", "brokerId": ""}), b"",
        ns.SER_ROCKETMQ), R(1), "null brokerId: NullPointerException, reply in JSON",
        remark=NPE_UNREG, ser=ns.SER_JSON, opaque=0))
    neg = bytearray(bin_hdr(106, None))
    neg[13:17] = b"\xff\xff\xff\xff"
    rows.append(Row("binary negative remark length", frame(bytes(neg), b"", ns.SER_ROCKETMQ),
                    CLOSED, "Netty readCharSequence(-1) throws; NettyDecoder closes"))
    rows.append(Row("binary NUL inside a value", frame(bin_hdr(105, {"topic": "T\0X"}), b"",
                                                       ns.SER_ROCKETMQ),
                    CLOSED, "Java keeps the NUL (code 17)", diff="nul-string"))
    rows.append(Row("header unknown field of any type", frame(header(extra={
        "zz": Raw('[1,{"a":null},1e999,"\\u00e9"]')})), R(0), "ignored"))
    rows.append(Row("header lone surrogate", frame(header(extra={"zz": Raw('"\\ud800"')})),
                    CLOSED, "Java keeps a lone UTF-16 surrogate (code 0)",
                    diff="lone-surrogate"))
    return rows


ROWS = (kv_rows() + register_rows() + unregister_rows() + query_rows() + route_rows() +
        admin_rows() + header_rows())


def read_one(c, timeout):
    """('reply', Reply) | ('closed', None) | ('silent', None)."""
    try:
        f = c.read_frame(timeout)
    except ns.ConnectionClosed:
        return ("closed", None)
    except (ns.ProtocolError, ValueError) as e:  # UnicodeDecodeError is a ValueError
        return ("undecodable reply", e)
    return ("silent", None) if f is None else ("reply", f)


def judge(row, got, reply):
    want = row.expect[0]
    if got != want:
        return "want %s, got %s %r" % (row.expect, got, reply)
    if want != "reply":
        return None
    if reply.code != row.expect[1]:
        return "code %d, want %d (remark %r)" % (reply.code, row.expect[1], reply.remark)
    if reply.opaque != row.opaque:
        return "opaque %d, want %d" % (reply.opaque, row.opaque)
    if not reply.flag & ns.FLAG_RESPONSE:
        return "reply lacks the response flag"
    if row.ser is not None and reply.ser != row.ser:
        return "reply serialize type %d, want %d" % (reply.ser, row.ser)
    if row.remark is not None:
        ok = row.remark(reply.remark) if callable(row.remark) else reply.remark == row.remark
        if not ok:
            return "remark %r" % (reply.remark if reply.remark is None
                                  else reply.remark[:300],)
    if isinstance(row.ext, bool):
        present = reply.ext is not None
        if present != row.ext:
            return "extFields present=%s, want %s" % (present, row.ext)
    elif isinstance(row.ext, dict):
        for k, v in row.ext.items():
            if (reply.ext or {}).get(k) != v:
                return "ext %s=%r, want %r" % (k, (reply.ext or {}).get(k), v)
    if row.check is not None:
        return row.check(reply)
    return None


class CompatTable(harness.NodeTestCase):
    def test_every_row_answers_as_java(self):
        verbose = os.environ.get("COMPAT_VERBOSE")
        failures = []
        with open(DOC, encoding="utf-8") as f:
            doc = f.read()
        for row in ROWS:
            if row.diff is not None and ("`%s`" % row.diff) not in doc:
                failures.append("%s: documented difference `%s` missing from docs/compat.md" %
                                (row.name, row.diff))
            for s in row.setup:
                with self.conn(timeout=T(5)) as c:
                    c.send_raw(s)
                    kind, r = read_one(c, T(5))
                    self.assertEqual((kind, getattr(r, "code", None)), ("reply", 0),
                                     "%s: setup %r" % (row.name, r))
            c = self.conn(timeout=T(5))
            c.send_raw(row.req)
            wait = T(0.5) if row.expect == SILENT else T(5)
            kind, reply = read_one(c, wait)
            if kind == "reply" and row.expect == CLOSED:
                kind = "reply"  # a reply where Java closes: reported below
            elif kind == "silent" and row.expect == CLOSED:
                kind = "closed" if c.wait_closed(T(2)) else "silent"
            problem = judge(row, kind, reply)
            c.close()
            if verbose:
                print("%-4s %-60s %s" % ("ok" if problem is None else "FAIL", row.name,
                                         problem or ""), flush=True)
            if problem is not None:
                failures.append("%s [%s]: %s" % (row.name, row.why, problem))
        print("compat table: %d rows, %d fail" % (len(ROWS), len(failures)), flush=True)
        self.assertTrue(self.node.alive(), "node died during the table")
        self.assertEqual(failures, [], "\n" + "\n".join(failures))


if __name__ == "__main__":
    harness.main()
