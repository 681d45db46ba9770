'use strict';
// Interop test: the real npm RocketMQ client ali-ons 3.12.0 asks raftns for topic routes.
// Starts one raftns on free ports with a temp data dir, registers two brokers with hand-built
// REGISTER_BROKER frames (one normal, one oneway), then drives ali-ons' MQClientAPI and MQClient
// against it. It does not test producing or consuming (there is no real broker).
// Run: RAFTNS_BIN=build/raftns node tests/interop/test_alions.js (after npm ci in tests/interop).

const assert = require('assert');
const childProcess = require('child_process');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');

let MQClientAPI, MQClient, ClientConfig;
try {
  MQClientAPI = require('ali-ons/lib/mq_client_api');
  MQClient = require('ali-ons/lib/mq_client');
  ClientConfig = require('ali-ons/lib/client_config');
} catch (err) {
  console.error(`FAIL: cannot load ali-ons (run \`npm ci\` in ${__dirname}): ${err.message}`);
  process.exit(1);
}

const RAFTNS_BIN = process.env.RAFTNS_BIN ||
  path.join(__dirname, '..', '..', 'build', 'raftns');
const CODE = { REGISTER_BROKER: 103, GET_ROUTEINFO_BY_TOPIC: 105, GET_BROKER_CLUSTER_INFO: 106 };
const FLAG_RESPONSE = 1;
const FLAG_ONEWAY = 2;
const TOPIC_NOT_EXIST = 17;

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

// ---------------------------------------------------------------- raftns process

class Raftns {
  async start() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'raftns-interop-'));
    this.port = await freePort();
    const raftPort = await freePort();
    const httpPort = await freePort();
    this.logPath = path.join(this.dir, 'raftns.log');
    const log = fs.openSync(this.logPath, 'a');
    const args = [
      '--data-dir', path.join(this.dir, 'data'),
      '--client-addr', `127.0.0.1:${this.port}`,
      '--raft-addr', `127.0.0.1:${raftPort}`,
      '--http-addr', `127.0.0.1:${httpPort}`,
    ];
    fs.mkdirSync(path.join(this.dir, 'data'));
    this.proc = childProcess.spawn(RAFTNS_BIN, args, { stdio: [ 'ignore', log, log ] });
    fs.closeSync(log);
    this.exited = new Promise(resolve => this.proc.once('exit', (code, signal) => {
      this.exitCode = code;
      this.exitSignal = signal;
      resolve();
    }));
    this.proc.once('error', err => { this.spawnError = err; });
    await waitFor('raftns to answer GET_BROKER_CLUSTER_INFO', 15000, async () => {
      if (this.spawnError) throw this.spawnError;
      if (this.exitCode !== undefined) {
        throw new Error(`raftns exited early (code ${this.exitCode})`);
      }
      const r = await requestOnce(this.port, CODE.GET_BROKER_CLUSTER_INFO);
      return r.header.code === 0;
    }).catch(err => {
      if (this.spawnError) throw this.spawnError;
      throw err;
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

  // SIGTERM and wait; SIGKILL after 10 s. Returns the exit code (null when killed).
  async stop() {
    if (!this.proc || this.proc.pid === undefined) return null;
    if (this.exitCode !== undefined || this.exitSignal) return this.exitCode;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 10000);
    await Promise.race([ this.exited, sleep(15000) ]);
    clearTimeout(timer);
    return this.exitCode === undefined ? null : this.exitCode;
  }

  // Last resort, synchronous (process 'exit' handler).
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

function closedClient(options) {
  return Object.assign({ httpclient: {}, logger: quietLogger }, options);
}

async function main(ns, cleanups) {
  // Broker A registers and waits for the reply; broker B registers oneway. Both connections
  // stay open: closing a broker's connection unregisters it.
  const a = registration('broker-a', '127.0.0.1:10911', [ 'TopicA', 'TopicB' ]);
  const b = registration('broker-b', '127.0.0.1:20911', [ 'TopicB', 'TopicC' ]);
  const connA = new RawConn(ns.port);
  const connB = new RawConn(ns.port);
  cleanups.push(() => connA.close(), () => connB.close());
  await connA.open();
  await connB.open();
  const reply = await connA.send(CODE.REGISTER_BROKER, a.ext, a.body);
  assert.strictEqual(reply.header.code, 0, `register broker-a: ${JSON.stringify(reply.header)}`);
  connB.sendOneway(CODE.REGISTER_BROKER, b.ext, b.body);
  await waitFor('the oneway registration of broker-b', 5000, async () => {
    const r = await requestOnce(ns.port, CODE.GET_ROUTEINFO_BY_TOPIC, { topic: 'TopicC' });
    return r.header.code === 0;
  });
  console.log('ok - registered broker-a (normal) and broker-b (oneway)');

  // MQClientAPI, one name server.
  const api = new MQClientAPI(closedClient({ nameSrv: ns.addr }));
  cleanups.push(() => api.close());
  await api.ready();
  const routeA = await api.getTopicRouteInfoFromNameServer('TopicA', 3000);
  assert.deepStrictEqual(routeA.brokerDatas.map(d => [ d.brokerName, d.cluster, d.brokerAddrs ]),
    [[ 'broker-a', 'DefaultCluster', { 0: '127.0.0.1:10911' }]]);
  assert.deepStrictEqual(routeA.queueDatas.map(q =>
    [ q.brokerName, q.readQueueNums, q.writeQueueNums, q.perm, q.topicSysFlag ]),
  [[ 'broker-a', 4, 4, 6, 0 ]]);
  const routeB = await api.getTopicRouteInfoFromNameServer('TopicB', 3000);
  assert.deepStrictEqual(routeB.brokerDatas.map(d => d.brokerName), [ 'broker-a', 'broker-b' ]);
  assert.deepStrictEqual(routeB.queueDatas.map(q => q.brokerName), [ 'broker-a', 'broker-b' ]);
  assert.strictEqual(routeB.brokerDatas[1].brokerAddrs['0'], '127.0.0.1:20911');
  console.log('ok - MQClientAPI.getTopicRouteInfoFromNameServer lists brokers and queues');

  await assert.rejects(api.getTopicRouteInfoFromNameServer('NoSuchTopic', 3000), err => {
    assert.strictEqual(err.name, 'MQClientException');
    assert.strictEqual(err.code, TOPIC_NOT_EXIST);
    assert.match(err.message, /No topic route info in name server for the topic: NoSuchTopic/);
    return true;
  });
  console.log('ok - unknown topic gives code 17 (TOPIC_NOT_EXIST)');

  // Several name servers, the first one dead. ali-ons rotates through the list on every call
  // and retries the next address on failure, so every lookup must succeed.
  const dead = `127.0.0.1:${await freePort()}`;
  const multi = new MQClientAPI(closedClient({ nameSrv: [ dead, ns.addr ] }));
  const deadErrors = [];
  multi.on('error', err => deadErrors.push(err)); // also silences sdk-base's console logging
  cleanups.push(() => multi.close());
  await multi.ready();
  for (let i = 0; i < 4; i++) {
    const r = await multi.getTopicRouteInfoFromNameServer('TopicC', 3000);
    assert.deepStrictEqual(r.brokerDatas.map(d => d.brokerAddrs['0']), [ '127.0.0.1:20911' ]);
  }
  assert.ok(deadErrors.some(e => e.code === 'ECONNREFUSED'),
    `the dead address was never tried (errors: ${deadErrors.map(String)})`);
  console.log('ok - several name servers with the first one dead');

  // MQClient (what producers and consumers use) fills its route and broker tables.
  const config = new ClientConfig(closedClient({
    nameSrv: [ dead, ns.addr ], instanceName: `raftns-interop-${process.pid}`,
  }));
  const client = new MQClient(config);
  client.on('error', () => {}); // connection errors to the dead address are expected
  cleanups.push(() => client.close());
  await client.ready();
  await client.updateTopicRouteInfoFromNameServer('TopicB');
  const cached = client._topicRouteTable.get('TopicB');
  assert.ok(cached, 'MQClient keeps the route of TopicB');
  assert.deepStrictEqual(cached.brokerDatas.map(d => d.brokerName), [ 'broker-a', 'broker-b' ]);
  assert.deepStrictEqual(client._brokerAddrTable.get('broker-b'), { 0: '127.0.0.1:20911' });
  console.log('ok - MQClient.updateTopicRouteInfoFromNameServer fills its tables');
}

async function run() {
  process.exitCode = 1; // until every check has passed, whatever path ends the process
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
  if (!failed) console.log('all ali-ons interop checks passed');
  process.exit(failed ? 1 : 0);
}

run();
