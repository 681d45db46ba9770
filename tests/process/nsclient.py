"""A small RocketMQ remoting client for the process tests: frames, JSON and ROCKETMQ binary
headers both ways, a buffered reader that copes with partial reads, and builders for the bodies
a broker sends (docs/protocol.md §2 and §4). It is a test tool, not a production client: no
retries, no reconnects, no thread safety. Every timeout it takes is in seconds, already scaled
(callers pass T(n)); a default is T(5) (scale.py)."""

import json
import os
import re
import select
import socket
import ssl
import struct
import time
import zlib

from scale import T, describe

LANGUAGES = ["JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP",
             "GO", "PHP", "OMS", "RUST", "NODE_JS"]
SER_JSON = 0
SER_ROCKETMQ = 1
FLAG_RESPONSE = 0x1
FLAG_ONEWAY = 0x2
MAX_FRAME = 16 * 1024 * 1024

# Response codes (docs/protocol.md §3.1; include/raftns/codes.h).
SUCCESS = 0
SYSTEM_ERROR = 1
SYSTEM_BUSY = 2
REQUEST_CODE_NOT_SUPPORTED = 3
NO_PERMISSION = 16
TOPIC_NOT_EXIST = 17
QUERY_NOT_FOUND = 22
GO_AWAY = 1500

# Request codes (docs/protocol.md §3.2).
PUT_KV_CONFIG = 100
GET_KV_CONFIG = 101
DELETE_KV_CONFIG = 102
REGISTER_BROKER = 103
UNREGISTER_BROKER = 104
GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_CLUSTER_INFO = 106
WIPE_WRITE_PERM_OF_BROKER = 205
GET_ALL_TOPIC_LIST = 206
DELETE_TOPIC_IN_NAMESRV = 216
REGISTER_TOPIC_IN_NAMESRV = 217
GET_KVLIST_BY_NAMESPACE = 219
GET_TOPICS_BY_CLUSTER = 224
GET_SYSTEM_TOPIC_LIST = 304
GET_UNIT_TOPIC_LIST = 311
GET_HAS_UNIT_SUB_TOPIC_LIST = 312
GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
UPDATE_NAMESRV_CONFIG = 318
GET_NAMESRV_CONFIG = 319
QUERY_DATA_VERSION = 322
ADD_WRITE_PERM_OF_BROKER = 327
GET_BROKER_MEMBER_GROUP = 901
BROKER_HEARTBEAT = 904

FAQ_49 = "http://rocketmq.apache.org/docs/faq/"
FAQ_5X = "https://rocketmq.apache.org/docs/bestPractice/06FAQ"


class ProtocolError(Exception):
    pass


class ConnectionClosed(Exception):
    pass


class Reply:
    """One decoded frame (normally a reply)."""

    def __init__(self, ser, header, body, raw_header):
        self.ser = ser
        self.header = header  # dict: JSON header as parsed, or binary header decoded
        self.raw_header = raw_header
        self.body = body
        self.code = header.get("code", 0)
        self.remark = header.get("remark")
        self.ext = header.get("extFields")
        self.flag = header.get("flag", 0)
        self.opaque = header.get("opaque", 0)
        self.version = header.get("version", 0)
        self.language = header.get("language", "JAVA")

    def body_json(self):
        return loads_tolerant(self.body)

    def __repr__(self):
        return "Reply(code=%r, remark=%r, ext=%r, flag=%r, opaque=%r, ser=%r, body=%r)" % (
            self.code, self.remark, self.ext, self.flag, self.opaque, self.ser,
            self.body[:300])


# --- headers ---------------------------------------------------------------------------------

def encode_json_header(code, ext=None, flag=0, opaque=0, version=479, remark=None,
                       language="JAVA"):
    """JSON header in Java's property order (alphabetical, nulls omitted)."""
    parts = ['"code":%d' % code]
    if ext is not None:
        parts.append('"extFields":' + json.dumps({k: str(v) for k, v in ext.items()},
                                                 separators=(",", ":"), ensure_ascii=False))
    parts.append('"flag":%d' % flag)
    parts.append('"language":%s' % json.dumps(language))
    parts.append('"opaque":%d' % opaque)
    if remark is not None:
        parts.append('"remark":' + json.dumps(remark, ensure_ascii=False))
    parts.append('"serializeTypeCurrentRPC":"JSON"')
    parts.append('"version":%d' % version)
    return ("{" + ",".join(parts) + "}").encode("utf-8")


def encode_binary_header(code, ext=None, flag=0, opaque=0, version=479, remark=None,
                         language="JAVA"):
    """ROCKETMQ binary header (docs/protocol.md §2.3)."""
    lang = LANGUAGES.index(language) if isinstance(language, str) else int(language)
    out = bytearray(struct.pack(">hBhii", code, lang, version, opaque, flag))
    rb = remark.encode("utf-8") if remark else b""
    out += struct.pack(">i", len(rb)) + rb
    blob = bytearray()
    for k, v in (ext or {}).items():
        kb, vb = str(k).encode("utf-8"), str(v).encode("utf-8")
        blob += struct.pack(">h", len(kb)) + kb + struct.pack(">i", len(vb)) + vb
    out += struct.pack(">i", len(blob)) + blob
    return bytes(out)


def decode_binary_header(b):
    if len(b) < 21:
        raise ProtocolError("binary header shorter than 21 bytes")
    code, lang, version, opaque, flag = struct.unpack(">hBhii", b[:13])
    pos = 13
    (rlen,) = struct.unpack(">i", b[pos:pos + 4])
    pos += 4
    if rlen < 0 or pos + rlen > len(b):
        raise ProtocolError("remark overruns header")
    remark = b[pos:pos + rlen].decode("utf-8") if rlen > 0 else None
    pos += rlen
    (elen,) = struct.unpack(">i", b[pos:pos + 4])
    pos += 4
    if elen < 0 or pos + elen > len(b):
        raise ProtocolError("ext overruns header")
    ext = None
    if elen > 0:
        ext = {}
        end = pos + elen
        while pos < end:
            (kl,) = struct.unpack(">h", b[pos:pos + 2])
            pos += 2
            k = b[pos:pos + kl].decode("utf-8")
            pos += kl
            (vl,) = struct.unpack(">i", b[pos:pos + 4])
            pos += 4
            ext[k] = b[pos:pos + vl].decode("utf-8")
            pos += vl
    h = {"code": code, "language": LANGUAGES[lang] if lang < len(LANGUAGES) else lang,
         "version": version, "opaque": opaque, "flag": flag}
    if remark is not None:
        h["remark"] = remark
    if ext is not None:
        h["extFields"] = ext
    return h


def encode_frame(header, body=b"", ser=SER_JSON):
    body = body or b""
    return struct.pack(">II", 4 + len(header) + len(body), (ser << 24) | len(header)) + \
        header + body


def build_request(code, ext=None, body=b"", version=479, ser=SER_JSON, oneway=False, opaque=0,
                  language="JAVA", remark=None):
    flag = FLAG_ONEWAY if oneway else 0
    enc = encode_binary_header if ser == SER_ROCKETMQ else encode_json_header
    return encode_frame(enc(code, ext, flag, opaque, version, remark, language), body, ser)


def decode_frame(payload):
    """payload = the bytes after the 4-byte length field."""
    if len(payload) < 4:
        raise ProtocolError("frame shorter than header info")
    (info,) = struct.unpack(">I", payload[:4])
    ser, hlen = info >> 24, info & 0xFFFFFF
    if hlen > len(payload) - 4:
        raise ProtocolError("header length past frame")
    raw = payload[4:4 + hlen]
    body = payload[4 + hlen:]
    if ser == SER_JSON:
        header = json.loads(raw.decode("utf-8"))
    elif ser == SER_ROCKETMQ:
        header = decode_binary_header(raw)
    else:
        raise ProtocolError("serialize type %d" % ser)
    return Reply(ser, header, bytes(body), bytes(raw))


# --- connection ------------------------------------------------------------------------------

class Conn:
    """One TCP connection; replies are matched by opaque, others kept for later. With tls (an
    ssl.SSLContext) the connection is TLS, the server's name checked against the host."""

    _next_opaque = 1000

    def __init__(self, addr, timeout=None, tls=None):
        host, port = addr if isinstance(addr, tuple) else (addr.rsplit(":", 1)[0],
                                                          int(addr.rsplit(":", 1)[1]))
        timeout = T(5.0) if timeout is None else timeout
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls is not None:
            try:
                self.sock = tls.wrap_socket(self.sock, server_hostname=host)
            except BaseException:
                self.sock.close()
                raise
        self.buf = bytearray()
        self.pending = {}  # opaque -> Reply
        self.eof = False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    @classmethod
    def new_opaque(cls):
        cls._next_opaque += 1
        return cls._next_opaque

    def send_raw(self, data):
        self.sock.sendall(data)

    def _fill(self, deadline):
        """Reads what is available until deadline. False on timeout; raises on EOF."""
        if self.eof:
            raise ConnectionClosed("connection closed by peer")
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        # Decrypted bytes a TLS socket already holds are invisible to select.
        pending = self.sock.pending() if hasattr(self.sock, "pending") else 0
        r, _, _ = select.select([self.sock], [], [], left) if not pending else ([1], 0, 0)
        if not r:
            return False
        try:
            chunk = self.sock.recv(1 << 20)
        except ssl.SSLWantReadError:
            return True
        except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
            chunk = b""  # a TLS alert or failure ends the connection too
        except socket.timeout:
            return False
        if not chunk:
            self.eof = True
            raise ConnectionClosed("connection closed by peer")
        self.buf += chunk
        return True

    def _take_frame(self):
        if len(self.buf) < 4:
            return None
        (length,) = struct.unpack(">I", self.buf[:4])
        if length > MAX_FRAME:
            raise ProtocolError("reply frame too long: %d" % length)
        if len(self.buf) < 4 + length:
            return None
        payload = bytes(self.buf[4:4 + length])
        del self.buf[:4 + length]
        return decode_frame(payload)

    def read_frame(self, timeout=None):
        """Next frame, or None on timeout. Raises ConnectionClosed on EOF."""
        deadline = time.monotonic() + (T(5.0) if timeout is None else timeout)
        while True:
            f = self._take_frame()
            if f is not None:
                return f
            if not self._fill(deadline):
                return None

    def wait_reply(self, opaque, timeout=None):
        deadline = time.monotonic() + (T(5.0) if timeout is None else timeout)
        while opaque not in self.pending:
            f = self.read_frame(max(0.0, deadline - time.monotonic()))
            if f is None:
                return None
            if f.flag & FLAG_RESPONSE:
                self.pending[f.opaque] = f
        return self.pending.pop(opaque)

    def request(self, code, ext=None, body=b"", version=479, ser=SER_JSON, oneway=False,
                timeout=None, opaque=None, language="JAVA"):
        """Sends one request; returns its Reply (None for oneway). Raises TimeoutError."""
        if opaque is None:
            opaque = Conn.new_opaque()
        timeout = T(5.0) if timeout is None else timeout
        self.send_raw(build_request(code, ext, body, version, ser, oneway, opaque, language))
        if oneway:
            return None
        r = self.wait_reply(opaque, timeout)
        if r is None:
            raise TimeoutError("deadline expired: reply to code %d opaque %d, after %s; "
                               "last observed: %d unread bytes" %
                               (code, opaque, describe(timeout), len(self.buf)))
        return r

    def pipeline(self, requests, timeout=None):
        """requests: list of dicts with request() keyword args (opaque optional). Sends all
        back to back in one write, returns the replies in request order."""
        frames, opaques = bytearray(), []
        for rq in requests:
            rq = dict(rq)
            op = rq.pop("opaque", None) or Conn.new_opaque()
            opaques.append(op)
            frames += build_request(rq.pop("code"), rq.get("ext"), rq.get("body", b""),
                                    rq.get("version", 479), rq.get("ser", SER_JSON), False, op)
        self.send_raw(bytes(frames))
        timeout = T(5.0) if timeout is None else timeout
        deadline = time.monotonic() + timeout
        out = []
        for op in opaques:
            r = self.wait_reply(op, max(0.0, deadline - time.monotonic()))
            if r is None:
                raise TimeoutError("deadline expired: pipelined reply for opaque %d, after %s; "
                                   "last observed: %d of %d replies" %
                                   (op, describe(timeout), len(out), len(opaques)))
            out.append(r)
        return out

    def wait_closed(self, timeout=None):
        """True when the peer closes the connection within timeout (data is discarded)."""
        deadline = time.monotonic() + (T(5.0) if timeout is None else timeout)
        try:
            while True:
                if not self._fill(deadline):
                    return False
        except ConnectionClosed:
            return True

    def nothing_within(self, timeout):
        """True when no byte arrives within timeout and the connection stays open. timeout is an
        observation window: pass it unscaled (a late byte under load only makes it pass)."""
        try:
            return not self._fill(time.monotonic() + timeout) and not self.buf
        except ConnectionClosed:
            return False


def sign_private(code, ext, body, secret, ts_ms=None, nonce=None):
    """Returns ext plus raftnsTs/raftnsNonce/raftnsSig: the signature raftns's private codes
    carry (include/raftns/sign.h), computed here independently of the C code: HMAC-SHA256
    keyed by the cluster secret over the label, the code, then every other ext field but the
    ACL "Signature" in byte order of its key, then the body, each piece prefixed by its u32 big-endian length
    (the code and the field count are bare u32s)."""
    import hashlib
    import hmac
    out = {k: v for k, v in (ext or {}).items() if k != "raftnsSig"}
    acl_signature = out.pop("Signature", None)  # signed after this one, over it
    out["raftnsTs"] = str(int(time.time() * 1000) if ts_ms is None else ts_ms)
    out["raftnsNonce"] = (nonce if nonce is not None else os.urandom(16)).hex()

    def piece(b):
        return struct.pack(">I", len(b)) + b
    msg = piece(b"raftns-private-v1") + struct.pack(">iI", code, len(out))
    for k in sorted(out, key=lambda k: k.encode()):
        msg += piece(k.encode()) + piece(out[k].encode())
    msg += piece(bytes(body))
    key = secret.encode() if isinstance(secret, str) else secret
    out["raftnsSig"] = hmac.new(key, msg, hashlib.sha256).hexdigest()
    if acl_signature is not None:
        out["Signature"] = acl_signature
    return out


def request_once(addr, code, ext=None, body=b"", timeout=None, tls=None, **kw):
    timeout = T(5.0) if timeout is None else timeout
    with Conn(addr, timeout, tls=tls) as c:
        return c.request(code, ext, body, timeout=timeout, **kw)


# --- fastjson-tolerant JSON ------------------------------------------------------------------

_BARE_KEY = re.compile(r"\s*(-?\d+)\s*:")


def quote_bare_keys(text):
    """Quotes unquoted integer object keys ({0:"a"} -> {"0":"a"}) outside strings."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        ch = text[i]
        if in_str:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
            out.append(ch)
        elif ch in "{,":
            out.append(ch)
            m = _BARE_KEY.match(text, i + 1)
            if m:
                out.append('"%s":' % m.group(1))
                i = m.end()
                continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def loads_tolerant(data):
    if isinstance(data, (bytes, bytearray)):
        data = bytes(data).decode("utf-8")
    return json.loads(quote_bare_keys(data))


def has_bare_int_keys(text):
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    return quote_bare_keys(text) != text


def has_quoted_int_keys(text):
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    return re.search(r'[{,]\s*"-?\d+"\s*:', text) is not None


def dumps_java(obj):
    """Compact JSON with sorted keys, like fastjson's bean output."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


# --- body builders ---------------------------------------------------------------------------

def crc32_masked(body):
    return zlib.crc32(body or b"") & 0x7FFFFFFF


def data_version(counter=1, timestamp=1700000000000, state_version=0, v5=True):
    dv = {"counter": counter, "timestamp": timestamp}
    if v5:
        dv["stateVersion"] = state_version
    return dv


def topic_config(name, read=4, write=4, perm=6, sys_flag=0, v5=True):
    tc = {"order": False, "perm": perm, "readQueueNums": read, "topicFilterType": "SINGLE_TAG",
          "topicName": name, "topicSysFlag": sys_flag, "writeQueueNums": write}
    if v5:
        tc["attributes"] = {}
    return tc


def _topic_table(topics, v5):
    table = {}
    for t in topics:
        tc = t if isinstance(t, dict) else topic_config(t, v5=v5)
        table[tc["topicName"]] = tc
    return table


def register_body(topics, dv=None, v5=True):
    """RegisterBrokerBody JSON (5.x shape with mapping fields, or 4.9 shape)."""
    dv = dv or data_version(v5=v5)
    wrapper = {"dataVersion": dv, "topicConfigTable": _topic_table(topics, v5)}
    if v5:
        wrapper["mappingDataVersion"] = data_version(0, dv["timestamp"], 0)
        wrapper["topicQueueMappingDetailMap"] = {}
        wrapper["topicQueueMappingInfoMap"] = {}
    return dumps_java({"filterServerList": [], "topicConfigSerializeWrapper": wrapper}
                      ).encode("utf-8")


def wrapper_body(topics, dv=None):
    """Bare TopicConfigSerializeWrapper (request version < 37)."""
    dv = dv or data_version(v5=False)
    return dumps_java({"dataVersion": dv, "topicConfigTable": _topic_table(topics, False)}
                      ).encode("utf-8")


def compressed_register_body(topics, dv=None, v5_lines=False, mappings=None, version=409):
    """zlib form of docs/protocol.md §4.4: int32-prefixed records."""
    dv = dv or data_version(v5=False)
    out = bytearray()

    def rec(b):
        out.extend(struct.pack(">i", len(b)) + b)

    rec(dumps_java(dv).encode())
    tcs = list(_topic_table(topics, False).values())
    out += struct.pack(">i", len(tcs))
    for tc in tcs:
        line = "%s %d %d %d %s" % (tc["topicName"], tc["readQueueNums"], tc["writeQueueNums"],
                                   tc["perm"], tc["topicFilterType"])
        if v5_lines:
            line += " {}"
        rec(line.encode())
    rec(b"[]")
    if version >= 413:
        mappings = mappings or []
        out += struct.pack(">i", len(mappings))
        for m in mappings:
            rec(dumps_java(m).encode())
    return zlib.compress(bytes(out), 9)


def register_ext(name="broker-a", broker_id=0, addr="127.0.0.1:10911", ha="127.0.0.1:10912",
                 cluster="c1", body=b"", acting=False, compressed=False, timeout_ms=None,
                 crc=None, zone=None):
    """REGISTER_BROKER extFields; acting=None leaves enableActingMaster out (old broker)."""
    ext = {"brokerName": name, "brokerAddr": addr, "clusterName": cluster,
           "haServerAddr": ha, "brokerId": str(broker_id),
           "compressed": "true" if compressed else "false",
           "bodyCrc32": str(crc32_masked(body) if crc is None else crc)}
    if acting is not None:
        ext["enableActingMaster"] = "true" if acting else "false"
    if timeout_ms is not None:
        ext["heartbeatTimeoutMillis"] = str(timeout_ms)
    if zone is not None:
        ext["__ZONE_NAME"] = zone
    return ext


def properties_text(d):
    return "".join("%s=%s\n" % (k, v) for k, v in d.items()).encode("utf-8")


def parse_properties(body):
    out = {}
    for line in (body or b"").decode("utf-8").splitlines():
        if not line or line[0] in "#!":
            continue
        k, _, v = line.partition("=")
        out[k] = v
    return out
