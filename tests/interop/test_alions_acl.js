'use strict';
// Interop test: the real npm RocketMQ client ali-ons 3.12.0 with accessKey/secretKey against a
// raftns node with ACL on and anonymous reads off (aclEnable=true, aclAnonymousRead=false).
// Accounts come from the cluster file ("acl": {"accounts": [...]}). With the right secret,
// ali-ons' route lookups (MQClientAPI, MQClient) and a producer start work; with a wrong secret
// or without credentials they are refused with code 16. The broker registration of the test is
// signed here with Node's crypto (independently of ali-ons and of raftns).
// Run: RAFTNS_BIN=build/raftns node tests/interop/test_alions_acl.js (after npm ci).

const assert = require('assert');
const childProcess = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const net = require('net');
const os = require('os');
const path = require('path');

let MQClientAPI, MQClient, ClientConfig, Producer;
try {
  MQClientAPI = require('ali-ons/lib/mq_client_api');
  MQClient = require('ali-ons/lib/mq_client');
  ClientConfig = require('ali-ons/lib/client_config');
  Producer = require('ali-ons').Producer;
} catch (err) {
  console.error(`FAIL: cannot load ali-ons (run \`npm ci\` in ${__dirname}): ${err.message}`);
  process.exit(1);
}

const RAFTNS_BIN = process.env.RAFTNS_BIN ||
  path.join(__dirname, '..', '..', 'build', 'raftns');
const CODE = { REGISTER_BROKER: 103, GET_ROUTEINFO_BY_TOPIC: 105, GET_BROKER_CLUSTER_INFO: 106 };
const FLAG_RESPONSE = 1;
const FLAG_ONEWAY = 2;
const NO_PERMISSION = 16;
const ACCOUNTS = [
  { accessKey: 'ons-reader', secretKey: 'reader-secret-1', role: 'reader' },
  { accessKey: 'ons-broker', secretKey: 'broker-secret-2', role: 'broker' },
];

// ---------------------------------------------------------------- helpers

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

function sleep(ms) {
  return new Promise(resolve => setTimeout(resolve, ms));
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = srv.address().port;
      srv.close(() => resolve(port));
    });
  });
}

// Polls fn() until it returns a truthy value; throws with the last result after timeoutMs.
async function waitFor(what, timeoutMs, fn) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${last})`);
    }
    await sleep(50);
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

  send(code, extFields, body, timeoutMs = 5000) {
    const { opaque, frame } = request(code, extFields, body, false);
    const p = new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(opaque);
        reject(new Error(`no reply to code ${code} within ${timeoutMs} ms`));
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
    return await c.send(code, extFields, body, 1000);
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

// REGISTER_BROKER ext fields and RegisterBrokerBody (PROTOCOL.md 4.4) for one master.
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


// The stock signature: values of every ext field but Signature, sorted by key (UTF-16 code
// units: JavaScript's default sort), then the body; base64 HMAC-SHA1 keyed by the secret key.
function sign(extFields, body, accessKey, secretKey) {
  const ext = Object.assign({}, extFields, { AccessKey: accessKey });
  const content = Object.keys(ext).filter(k => k !== 'Signature').sort().map(k => ext[k]).join('');
  const hmac = crypto.createHmac('sha1', secretKey);
  hmac.update(Buffer.concat([ Buffer.from(content, 'utf8'), body || Buffer.alloc(0) ]));
  ext.Signature = hmac.digest('base64');
  return ext;
}

function httpGet(port, p) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: p }, res => {
      let data = '';
      res.on('data', d => { data += d; });
      res.on('end', () => resolve(data));
    }).on('error', reject);
  });
}

function refusals(metrics) {
  let n = 0;
  for (const m of metrics.matchAll(/^raftns_acl_refusals_total\{reason="[a-z_]+"\} (\d+)$/gm)) {
    n += Number(m[1]);
  }
  return n;
}

// ---------------------------------------------------------------- raftns process

class Raftns {
  async start() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'raftns-interop-acl-'));
    this.port = await freePort();
    const raftPort = await freePort();
    this.httpPort = await freePort();
    this.logPath = path.join(this.dir, 'raftns.log');
    const configPath = path.join(this.dir, 'cluster.json');
    fs.writeFileSync(configPath, JSON.stringify({
      secret: 'interop-acl-secret',
      nodes: [{ id: 1, raft: `127.0.0.1:${raftPort}`, client: `127.0.0.1:${this.port}`,
        http: `127.0.0.1:${this.httpPort}`, bootstrap: true }],
      namesrv: { aclEnable: true, aclAnonymousRead: false },
      acl: { accounts: ACCOUNTS },
    }));
    const log = fs.openSync(this.logPath, 'a');
    fs.mkdirSync(path.join(this.dir, 'data'));
    this.proc = childProcess.spawn(RAFTNS_BIN,
      [ '--config', configPath, '--id', '1', '--data-dir', path.join(this.dir, 'data') ],
      { stdio: [ 'ignore', log, log ] });
    fs.closeSync(log);
    this.exited = new Promise(resolve => this.proc.once('exit', (code, signal) => {
      this.exitCode = code;
      this.exitSignal = signal;
      resolve();
    }));
    this.proc.once('error', err => { this.spawnError = err; });
    // ready once a signed 106 answers 0: the seed accounts are applied then
    await waitFor('raftns to answer a signed GET_BROKER_CLUSTER_INFO', 15000, async () => {
      if (this.spawnError) throw this.spawnError;
      if (this.exitCode !== undefined) {
        throw new Error(`raftns exited early (code ${this.exitCode})`);
      }
      const r = await requestOnce(this.port, CODE.GET_BROKER_CLUSTER_INFO,
        sign({}, null, ACCOUNTS[0].accessKey, ACCOUNTS[0].secretKey));
      return r.header.code === 0;
    });
  }

  get addr() {
    return `127.0.0.1:${this.port}`;
  }

  log() {
    try {
      return fs.readFileSync(this.logPath, 'utf8');
    } catch (err) {
      return '';
    }
  }

  async stop() {
    if (!this.proc || this.proc.pid === undefined) return null;
    if (this.exitCode !== undefined || this.exitSignal) return this.exitCode;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 10000);
    await Promise.race([ this.exited, sleep(15000) ]);
    clearTimeout(timer);
    return this.exitCode === undefined ? null : this.exitCode;
  }

  killNow() {
    if (this.proc && this.proc.pid !== undefined && this.exitCode === undefined &&
        !this.exitSignal) {
      try {
        process.kill(this.proc.pid, 'SIGKILL');
      } catch (err) {
        // already gone
      }
    }
    this.removeDir();
  }

  removeDir() {
    if (this.dir) {
      fs.rmSync(this.dir, { recursive: true, force: true });
      this.dir = null;
    }
  }
}

// ---------------------------------------------------------------- the test

const quietLogger = {
  info() {}, warn() {}, debug() {},
  error(err) { if (process.env.VERBOSE) console.error(err); },
};

function client(options) {
  return Object.assign({ httpclient: {}, logger: quietLogger }, options);
}

const RIGHT = { accessKey: ACCOUNTS[0].accessKey, secretKey: ACCOUNTS[0].secretKey };
const WRONG = { accessKey: ACCOUNTS[0].accessKey, secretKey: 'not-the-secret' };

async function main(ns, cleanups) {
  // The broker registers with a signature of the broker account; its connection stays open.
  const a = registration('broker-a', '127.0.0.1:10911', [ 'TopicA', 'TopicB' ]);
  const conn = new RawConn(ns.port);
  cleanups.push(() => conn.close());
  await conn.open();
  const unsigned = await conn.send(CODE.REGISTER_BROKER, a.ext, a.body);
  assert.strictEqual(unsigned.header.code, NO_PERMISSION, 'an unsigned register is refused');
  const reply = await conn.send(CODE.REGISTER_BROKER,
    sign(a.ext, a.body, ACCOUNTS[1].accessKey, ACCOUNTS[1].secretKey), a.body);
  assert.strictEqual(reply.header.code, 0, `register broker-a: ${JSON.stringify(reply.header)}`);
  console.log('ok - unsigned register refused, signed register accepted');

  // MQClientAPI with the right secret: route lookups work.
  const api = new MQClientAPI(client(Object.assign({ nameSrv: ns.addr }, RIGHT)));
  cleanups.push(() => api.close());
  await api.ready();
  const route = await api.getTopicRouteInfoFromNameServer('TopicA', 3000);
  assert.deepStrictEqual(route.brokerDatas.map(d => [ d.brokerName, d.brokerAddrs ]),
    [[ 'broker-a', { 0: '127.0.0.1:10911' }]]);
  await assert.rejects(api.getTopicRouteInfoFromNameServer('NoSuchTopic', 3000),
    err => err.code === 17);
  console.log('ok - ali-ons route lookups with accessKey/secretKey');

  // A wrong secret and no credentials at all are refused with code 16.
  const before = refusals(await httpGet(ns.httpPort, '/metrics'));
  for (const [ what, creds ] of [[ 'wrong secret', WRONG ], [ 'no credentials', {} ]]) {
    const bad = new MQClientAPI(client(Object.assign({ nameSrv: ns.addr }, creds)));
    cleanups.push(() => bad.close());
    await bad.ready();
    await assert.rejects(bad.getTopicRouteInfoFromNameServer('TopicA', 3000), err => {
      assert.strictEqual(err.name, 'MQClientException', what);
      assert.strictEqual(err.code, NO_PERMISSION, what);
      assert.match(err.message, creds.secretKey ? /signature mismatch/ : /no AccessKey/);
      return true;
    });
  }
  const after = refusals(await httpGet(ns.httpPort, '/metrics'));
  assert.ok(after >= before + 2, `refusals counted (${before} -> ${after})`);
  console.log('ok - wrong secret and anonymous lookups refused with code 16');

  // MQClient (producers and consumers) fills its route tables with the right secret.
  const config = new ClientConfig(client(Object.assign({
    nameSrv: ns.addr, instanceName: `raftns-acl-interop-${process.pid}`,
  }, RIGHT)));
  const mq = new MQClient(config);
  mq.on('error', () => {});
  cleanups.push(() => mq.close());
  await mq.ready();
  await mq.updateTopicRouteInfoFromNameServer('TopicB');
  assert.deepStrictEqual(mq._topicRouteTable.get('TopicB').brokerDatas.map(d => d.brokerName),
    [ 'broker-a' ]);
  console.log('ok - MQClient.updateTopicRouteInfoFromNameServer with accessKey/secretKey');

  // A producer starts and looks routes up through its client.
  const producer = new Producer(client(Object.assign({
    nameSrv: ns.addr, producerGroup: 'GID_RAFTNS_ACL', instanceName: `acl-producer-${process.pid}`,
  }, RIGHT)));
  const producerErrors = [];
  producer.on('error', err => producerErrors.push(err));
  cleanups.push(() => producer.close());
  await producer.ready();
  await producer._mqClient.updateTopicRouteInfoFromNameServer('TopicA');
  assert.ok(producer._mqClient._topicRouteTable.get('TopicA'), 'the producer knows TopicA');
  assert.ok(!producerErrors.some(e => e.code === NO_PERMISSION),
    `producer refused: ${producerErrors.map(String)}`);
  console.log('ok - producer started and resolved a route with accessKey/secretKey');
}

async function run() {
  process.exitCode = 1;
  const ns = new Raftns();
  const cleanups = [];
  process.once('exit', () => ns.killNow());
  for (const sig of [ 'SIGINT', 'SIGTERM' ]) {
    process.once(sig, () => { ns.killNow(); process.exit(130); });
  }
  let failed = false;
  try {
    await ns.start();
    await main(ns, cleanups);
  } catch (err) {
    failed = true;
    console.error('FAIL:', err && err.stack || err);
  }
  for (const fn of cleanups.reverse()) {
    try {
      await Promise.race([ Promise.resolve(fn()), sleep(3000) ]);
    } catch (err) {
      // closing is best effort
    }
  }
  const rc = await ns.stop();
  if (!failed && rc !== 0) {
    failed = true;
    console.error(`FAIL: raftns exit code ${rc} (signal ${ns.exitSignal}) after SIGTERM`);
  }
  if (failed) console.error(`---- raftns log ----\n${ns.log()}---- end of log ----`);
  ns.removeDir();
  if (!failed) console.log('all ali-ons ACL interop checks passed');
  process.exit(failed ? 1 : 0);
}

run();
