'use strict';
// The RocketMQ remoting pieces the interop tests share: the deadline scale, CRC-32, free ports,
// polling with a deadline, request frames, a raw connection matched by opaque, and stock-shaped
// broker registrations. It starts no process (each test has its own raftns wrapper).

const assert = require('assert');
const net = require('net');

const FLAG_RESPONSE = 1;
const FLAG_ONEWAY = 2;

// CRC-32 (IEEE 802.3, as zlib's crc32); older node has no zlib.crc32.
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf) {
  let c = 0xFFFFFFFF;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >>> 8);
  return (c ^ 0xFFFFFFFF) >>> 0;
}

// The deadline scale of the interop tier, the contract of tests/process/scale.py (and
// docs/testing.md): RAFTNS_TEST_SCALE (a positive number, default 1) times 3 when RAFTNS_SANITIZE
// is on. A value that is not a positive number throws rather than shorten every deadline.
function testScale() {
  const text = (process.env.RAFTNS_TEST_SCALE || '').trim();
  const user = text === '' ? 1 : Number(text);
  if (!(user > 0) || !Number.isFinite(user)) {
    throw new Error(`RAFTNS_TEST_SCALE must be a positive number, not '${text}'`);
  }
  const sanitize = /^(on|1|true|yes)$/i.test(process.env.RAFTNS_SANITIZE || '');
  return user * (sanitize ? 3 : 1);
}

// ms scaled by testScale(): the bound of anything that waits for raftns or a client library.
function T(ms) {
  return ms * testScale();
}

// How a failure names a bound: "4500 ms (deadline scale 3)".
function describeBound(ms) {
  return `${Math.round(ms)} ms (deadline scale ${testScale()})`;
}

// A poll result that is not done yet but says what the poll saw (waitFor prints it):
// `return seen(r.header.code === 0, r.header)`.
class Seen {
  constructor(value) {
    this.value = value;
  }
}

function seen(ok, value) {
  return ok ? true : new Seen(value);
}

function showObserved(v) {
  if (v instanceof Seen) v = v.value;
  if (v instanceof Error) return `${v.name}: ${v.message}`;
  try {
    return typeof v === 'string' ? v : JSON.stringify(v);
  } catch (err) {
    return String(v);
  }
}

// A promise that resolves after ms: the bound of a Promise.race, or the pause between two
// polls of waitFor's deadline loop.
function timeoutAfter(ms) {
  return new Promise(resolve => setTimeout(resolve, ms));
}

// Claims port among all test processes on the machine, as tests/process/harness.py
// claim_port does: an abstract Unix socket named after the port, which only one process can
// bind and which goes away with its process (libuv binds it NUL-padded to the whole
// sun_path, and the other tiers do the same). Tests running in parallel picked the same port
// between one's check and its node's bind (seen in CI).
const portClaims = [];

function claimPort(port) {
  return new Promise(resolve => {
    const claim = net.createServer();
    claim.once('error', () => resolve(false));
    claim.listen('\0raftns-test-port-' + port, () => {
      claim.unref(); // held for the process's life without keeping it alive
      portClaims.push(claim);
      resolve(true);
    });
  });
}

// A TCP port on 127.0.0.1 below the kernel's ephemeral range (32768 and up by default), as
// tests/cluster/free_port.h picks them: an ephemeral one can be taken by another test's
// outgoing connection before the node binds it ("address already in use", seen in CI).
// Random in [20000, 32000), claimed, checked free by listening.
function tryListen(port) {
  return new Promise(resolve => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

async function freePort() {
  for (let attempt = 0; attempt < 20000; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    if (!(await claimPort(port))) continue;
    if (await tryListen(port)) {
      return port;
    }
  }
  throw new Error('no free port in [20000, 32000)');
}

// Polls fn() until it returns a truthy value other than a Seen; timeoutMs is already scaled
// (pass T(n)). At the deadline it throws naming what, the bound and the last result.
async function waitFor(what, timeoutMs, fn) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last && !(last instanceof Seen)) return last;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) {
      throw new Error(`deadline expired: ${what}, after ${describeBound(timeoutMs)}; ` +
        `last observed: ${showObserved(last)}`);
    }
    await timeoutAfter(50);
  }
}

function encodeFrame(header, body) {
  const h = Buffer.from(JSON.stringify(header), 'utf8');
  const b = body || Buffer.alloc(0);
  const prefix = Buffer.alloc(8);
  prefix.writeUInt32BE(4 + h.length + b.length, 0);
  prefix.writeUInt32BE(h.length, 4); // serialize type 0 (JSON) in the top byte
  return Buffer.concat([ prefix, h, b ]);
}

let nextOpaque = 1;

function request(code, extFields, body, oneway) {
  const opaque = nextOpaque++;
  const header = {
    code,
    extFields,
    flag: oneway ? FLAG_ONEWAY : 0,
    language: 'JAVA',
    opaque,
    serializeTypeCurrentRPC: 'JSON',
    version: 479,
  };
  return { opaque, frame: encodeFrame(header, body) };
}

// A raw remoting connection that stays open (a broker's registration lives as long as its
// connection) and matches replies by opaque.
class RawConn {
  constructor(port) {
    this.port = port;
    this.buf = Buffer.alloc(0);
    this.waiters = new Map();
    this.closed = false;
  }

  open() {
    return new Promise((resolve, reject) => {
      this.sock = net.connect(this.port, '127.0.0.1', resolve);
      this.sock.once('error', reject);
      this.sock.on('data', data => this.onData(data));
      this.sock.on('close', () => {
        this.closed = true;
        for (const w of this.waiters.values()) w.reject(new Error('connection closed'));
        this.waiters.clear();
      });
    });
  }

  onData(data) {
    this.buf = Buffer.concat([ this.buf, data ]);
    while (this.buf.length >= 4) {
      const len = this.buf.readUInt32BE(0);
      if (this.buf.length < 4 + len) return;
      const info = this.buf.readUInt32BE(4);
      const hlen = info & 0xFFFFFF;
      assert.strictEqual(info >>> 24, 0, 'reply to a JSON request must have a JSON header');
      const header = JSON.parse(this.buf.slice(8, 8 + hlen).toString('utf8'));
      const body = this.buf.slice(8 + hlen, 4 + len);
      this.buf = this.buf.slice(4 + len);
      const w = this.waiters.get(header.opaque);
      if (w && (header.flag & FLAG_RESPONSE)) {
        this.waiters.delete(header.opaque);
        w.resolve({ header, body });
      }
    }
  }

  send(code, extFields, body, timeoutMs = T(5000)) {
    const { opaque, frame } = request(code, extFields, body, false);
    const p = new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(opaque);
        reject(new Error(`deadline expired: reply to code ${code} opaque ${opaque}, after ` +
          `${describeBound(timeoutMs)}; last observed: ${this.buf.length} unread bytes`));
      }, timeoutMs);
      this.waiters.set(opaque, {
        resolve: v => { clearTimeout(timer); resolve(v); },
        reject: e => { clearTimeout(timer); reject(e); },
      });
    });
    this.sock.write(frame);
    return p;
  }

  sendOneway(code, extFields, body) {
    this.sock.write(request(code, extFields, body, true).frame);
  }

  close() {
    if (this.sock) this.sock.destroy();
  }
}

async function requestOnce(port, code, extFields, body) {
  const c = new RawConn(port);
  try {
    await c.open();
    return await c.send(code, extFields, body, T(2000));
  } finally {
    c.close();
  }
}

function topicConfig(name) {
  return {
    attributes: {}, order: false, perm: 6, readQueueNums: 4, topicFilterType: 'SINGLE_TAG',
    topicName: name, topicSysFlag: 0, writeQueueNums: 4,
  };
}

// REGISTER_BROKER ext fields and RegisterBrokerBody (docs/protocol.md §4.4) for one master.
function registration(brokerName, brokerAddr, topics) {
  const table = {};
  for (const t of topics) table[t] = topicConfig(t);
  const dv = { counter: 1, stateVersion: 0, timestamp: 1700000000000 };
  const body = Buffer.from(JSON.stringify({
    filterServerList: [],
    topicConfigSerializeWrapper: {
      dataVersion: dv,
      mappingDataVersion: { counter: 0, stateVersion: 0, timestamp: dv.timestamp },
      topicConfigTable: table,
      topicQueueMappingDetailMap: {},
      topicQueueMappingInfoMap: {},
    },
  }), 'utf8');
  const ext = {
    brokerAddr,
    brokerId: '0',
    brokerName,
    bodyCrc32: String(crc32(body) & 0x7FFFFFFF),
    clusterName: 'DefaultCluster',
    compressed: 'false',
    enableActingMaster: 'false',
    haServerAddr: brokerAddr.replace(/:\d+$/, ':10912'),
  };
  return { ext, body };
}

module.exports = {
  FLAG_RESPONSE, FLAG_ONEWAY, testScale, T, describeBound, Seen, seen, crc32, timeoutAfter,
  freePort, waitFor, encodeFrame, request, RawConn, requestOnce, topicConfig, registration,
};
