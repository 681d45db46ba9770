'use strict';
// Interop failover test: ali-ons 3.12.0 given all three addresses of a 3-node raftns cluster keeps
// resolving topic routes while the nodes are killed (-9) one at a time, keeping a majority: kill
// one, restart it from its data dir, kill the next. A fake broker (hand-built REGISTER_BROKER
// frames) holds a connection to every node and re-registers with a node after it restarts, as a
// real broker does. It does not test producing or consuming, and it measures no timing.
// Run: RAFTNS_BIN=build/raftns node tests/interop/test_alions_failover.js (after npm ci here).

const assert = require('assert');
const childProcess = require('child_process');
const fs = require('fs');
const http = require('http');
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
// Every deadline is T(ms): scaled by RAFTNS_TEST_SCALE (remoting.js, docs/testing.md).
const {
  T, describeBound, seen, waitFor, crc32, timeoutAfter, freePort,
} = require('./remoting');

const ELECTION_MS = 1000;
const CODE = { REGISTER_BROKER: 103, GET_ROUTEINFO_BY_TOPIC: 105, GET_BROKER_CLUSTER_INFO: 106 };
const FLAG_RESPONSE = 1;

// ---------------------------------------------------------------- helpers

async function freePorts(n) {
  // distinct, below the ephemeral range (remoting.js freePort)
  const ports = [];
  for (let i = 0; i < n; i++) ports.push(await freePort());
  return ports;
}

function encodeFrame(header, body) {
  const h = Buffer.from(JSON.stringify(header), 'utf8');
  const b = body || Buffer.alloc(0);
  const prefix = Buffer.alloc(8);
  prefix.writeUInt32BE(4 + h.length + b.length, 0);
  prefix.writeUInt32BE(h.length, 4);
  return Buffer.concat([ prefix, h, b ]);
}

let nextOpaque = 1;

// A raw remoting connection matching replies by opaque (a broker's registration lives as long
// as one of its connections).
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
      this.sock.on('error', () => {});
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
      const hlen = this.buf.readUInt32BE(4) & 0xFFFFFF;
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
    const opaque = nextOpaque++;
    const frame = encodeFrame({
      code, extFields, flag: 0, language: 'JAVA', opaque, serializeTypeCurrentRPC: 'JSON',
      version: 479,
    }, body);
    const p = new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(opaque);
        reject(new Error(`deadline expired: reply to code ${code}, after ` +
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

function registration(brokerName, brokerAddr, topics, counter) {
  const table = {};
  for (const t of topics) {
    table[t] = {
      attributes: {}, order: false, perm: 6, readQueueNums: 4, topicFilterType: 'SINGLE_TAG',
      topicName: t, topicSysFlag: 0, writeQueueNums: 4,
    };
  }
  const dv = { counter, stateVersion: 0, timestamp: 1700000000000 };
  const body = Buffer.from(JSON.stringify({
    filterServerList: [],
    topicConfigSerializeWrapper: {
      dataVersion: dv,
      mappingDataVersion: { counter: 0, stateVersion: 0, timestamp: dv.timestamp },
      topicConfigTable: table, topicQueueMappingDetailMap: {}, topicQueueMappingInfoMap: {},
    },
  }), 'utf8');
  const ext = {
    brokerAddr, brokerId: '0', brokerName, bodyCrc32: String(crc32(body) & 0x7FFFFFFF),
    clusterName: 'DefaultCluster', compressed: 'false', enableActingMaster: 'false',
    haServerAddr: brokerAddr.replace(/:\d+$/, ':10912'),
  };
  return { ext, body };
}

// ---------------------------------------------------------------- the cluster

class Node {
  constructor(cluster, id, ports) {
    this.cluster = cluster;
    this.id = id;
    [ this.port, this.raftPort, this.httpPort ] = ports;
    this.dataDir = path.join(cluster.dir, `data-${id}`);
    this.logPath = path.join(cluster.dir, `node-${id}.log`);
    fs.mkdirSync(this.dataDir);
    this.proc = null;
  }

  get addr() {
    return `127.0.0.1:${this.port}`;
  }

  entry() {
    return {
      id: this.id, raft: `127.0.0.1:${this.raftPort}`, client: this.addr,
      http: `127.0.0.1:${this.httpPort}`, bootstrap: true,
    };
  }

  start() {
    const log = fs.openSync(this.logPath, 'a');
    fs.writeSync(log, `==== test: starting node ${this.id}\n`);
    const args = [ '--config', this.cluster.configPath, '--id', String(this.id),
      '--data-dir', this.dataDir ];
    const proc = childProcess.spawn(RAFTNS_BIN, args, { stdio: [ 'ignore', log, log ] });
    fs.closeSync(log);
    this.proc = proc;
    this.running = true;
    this.killed = false;
    this.exited = new Promise(resolve => proc.once('exit', (code, signal) => {
      proc.exitCode_ = code;
      proc.exitSignal_ = signal;
      if (this.proc === proc) this.running = false;
      resolve({ code, signal });
    }));
    proc.once('error', err => { this.spawnError = err; });
  }

  async waitReady(timeoutMs) {
    await waitFor(`node ${this.id} to answer GET_BROKER_CLUSTER_INFO with 0`, timeoutMs,
      async () => {
        if (this.spawnError) throw this.spawnError;
        if (!this.running) throw new Error(`node ${this.id} exited`);
        const r = await requestOnce(this.port, CODE.GET_BROKER_CLUSTER_INFO);
        return seen(r.header.code === 0, r.header);
      });
  }

  // GET /status as an object; rejects when the node does not answer within T(2 s).
  status() {
    return new Promise((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port: this.httpPort, path: '/status',
        timeout: T(2000) }, res => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', d => { data += d; });
        res.on('end', () => {
          try {
            resolve(JSON.parse(data));
          } catch (err) {
            reject(err);
          }
        });
      });
      req.on('timeout', () => req.destroy(new Error(`GET /status of node ${this.id} timed out`)));
      req.on('error', reject);
    });
  }

  async kill9() {
    if (!this.running) return;
    this.killed = true;
    this.proc.kill('SIGKILL');
    await this.exited;
  }

  // SIGTERM and wait; SIGKILL after T(15 s). Returns the exit code (null when killed).
  async stop() {
    if (!this.proc) return 0;
    if (!this.running) return this.killed ? 0 : this.proc.exitCode_;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), T(15000));
    const { code } = await this.exited;
    clearTimeout(timer);
    return code;
  }

  killNow() {
    if (this.proc && this.running) {
      try {
        process.kill(this.proc.pid, 'SIGKILL');
      } catch (err) {
        // already gone
      }
    }
  }

  log() {
    try {
      return fs.readFileSync(this.logPath, 'utf8');
    } catch (err) {
      return '';
    }
  }
}

class Cluster {
  async create(n) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'raftns-interop-cluster-'));
    this.configPath = path.join(this.dir, 'cluster.json');
    const ports = await freePorts(3 * n);
    this.nodes = [];
    for (let i = 0; i < n; i++) this.nodes.push(new Node(this, i + 1, ports.slice(3 * i, 3 * i + 3)));
    fs.writeFileSync(this.configPath, JSON.stringify({
      secret: 'raftns-interop-secret', electionTimeoutMs: ELECTION_MS, heartbeatMs: 100,
      snapshotThreshold: 4096, nodes: this.nodes.map(nd => nd.entry()), namesrv: {},
    }, null, 2));
  }

  // The id of the leader every running node agrees on, else a Seen of their /status answers.
  async agreedLeader() {
    const sts = {};
    for (const nd of this.nodes.filter(n => n.running)) {
      try {
        const st = await nd.status();
        const ld = st.leader && typeof st.leader === 'object' ? st.leader.id : st.leader;
        sts[nd.id] = { role: String(st.role).toLowerCase(), leader: Number(ld) || 0 };
      } catch (err) {
        sts[nd.id] = { error: err.message };
      }
    }
    const leaders = Object.keys(sts).filter(id => sts[id].role === 'leader').map(Number);
    const agreed = leaders.length === 1 &&
      Object.keys(sts).every(id => Number(id) === leaders[0] || sts[id].leader === leaders[0]);
    return agreed ? leaders[0] : seen(false, sts);
  }

  killNow() {
    for (const nd of this.nodes || []) nd.killNow();
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

// A fake broker with one connection per node; re-registers with a node after it restarts.
class Broker {
  constructor(name, addr, topics) {
    this.name = name;
    this.addr = addr;
    this.topics = topics;
    this.counter = 1;
    this.conns = new Map();
  }

  async register(node) {
    let c = this.conns.get(node.id);
    if (!c || c.closed) {
      c = new RawConn(node.port);
      await c.open();
      this.conns.set(node.id, c);
    }
    const { ext, body } = registration(this.name, this.addr, this.topics, this.counter);
    return c.send(CODE.REGISTER_BROKER, ext, body, T(10000));
  }

  async registerUntilAcked(node, timeoutMs) {
    await waitFor(`broker ${this.name} acknowledged by node ${node.id}`, timeoutMs, async () => {
      const r = await this.register(node);
      return r.header.code === 0;
    });
  }

  close() {
    for (const c of this.conns.values()) c.close();
  }
}

// Looks routes up through ali-ons in a loop until stopped; records every outcome.
class Lookups {
  constructor(api, client) {
    this.api = api;
    this.client = client;
    this.ok = 0;
    this.failures = [];
    this.wrong = [];
    this.stopped = false;
  }

  check(route, how) {
    const names = route.brokerDatas.map(d => d.brokerName);
    const addrs = route.brokerDatas.map(d => d.brokerAddrs['0']);
    if (JSON.stringify(names) !== '["broker-a"]' ||
        JSON.stringify(addrs) !== '["127.0.0.1:10911"]') {
      this.wrong.push(`${how}: ${JSON.stringify(route)}`);
    }
  }

  async run() {
    let i = 0;
    while (!this.stopped) {
      const topic = i % 2 ? 'TopicA' : 'TopicB';
      const who = i % 5 === 4 ? 'client' : 'api';
      try {
        if (i % 5 === 4) {
          await this.client.updateTopicRouteInfoFromNameServer(topic);
          this.check(this.client._topicRouteTable.get(topic), `MQClient ${topic}`);
        } else {
          this.check(await this.api.getTopicRouteInfoFromNameServer(topic, T(3000)),
            `MQClientAPI ${topic}`);
        }
        this.ok++;
      } catch (err) {
        this.failures.push(`${new Date().toISOString()} ${who} ${err.name} ${err.code}: ` +
          err.message);
      }
      i++;
      await timeoutAfter(20); // pacing of the lookup loop, not a wait for state
    }
  }
}

async function main(cluster, cleanups) {
  await cluster.create(3);
  for (const nd of cluster.nodes) nd.start();
  for (const nd of cluster.nodes) await nd.waitReady(T(30000));
  console.log('ok - three nodes ready');

  const broker = new Broker('broker-a', '127.0.0.1:10911', [ 'TopicA', 'TopicB' ]);
  cleanups.push(() => broker.close());
  for (const nd of cluster.nodes) await broker.registerUntilAcked(nd, T(20000));
  for (const nd of cluster.nodes) {
    await waitFor(`TopicA routable on node ${nd.id}`, T(5000), async () =>
      (await requestOnce(nd.port, CODE.GET_ROUTEINFO_BY_TOPIC, { topic: 'TopicA' }))
        .header.code === 0);
  }
  console.log('ok - broker-a registered with every node');

  const addrs = cluster.nodes.map(nd => nd.addr);
  const api = new MQClientAPI({ httpclient: {}, logger: quietLogger, nameSrv: addrs });
  api.on('error', () => {}); // connection errors to killed nodes are expected
  cleanups.push(() => api.close());
  await api.ready();
  const client = new MQClient(new ClientConfig({
    httpclient: {}, logger: quietLogger, nameSrv: addrs,
    instanceName: `raftns-interop-failover-${process.pid}`,
  }));
  client.on('error', () => {});
  cleanups.push(() => client.close());
  await client.ready();

  const lookups = new Lookups(api, client);
  const loop = lookups.run();
  cleanups.push(() => { lookups.stopped = true; return loop; });
  await waitFor('first lookups', T(10000), () => seen(lookups.ok >= 10,
    `${lookups.ok} lookups, failures: ${lookups.failures.slice(-3)}`));

  for (const nd of cluster.nodes) {
    await nd.kill9();
    const before = lookups.ok;
    // Keep looking up through the election, however long it takes, with one node dead: until
    // the two others agree on a leader, then 20 more lookups.
    await waitFor(`a leader agreed on by the nodes but ${nd.id}`, T(20000),
      () => cluster.agreedLeader());
    const elected = lookups.ok;
    await waitFor(`lookups with node ${nd.id} dead`, T(10000),
      () => seen(lookups.ok >= elected + 20,
        `${lookups.ok - before} lookups since the kill, ${lookups.failures.length} failed`));
    nd.start();
    await nd.waitReady(T(30000));
    await broker.registerUntilAcked(nd, T(20000)); // a real broker re-registers
    const after = lookups.ok;
    await waitFor(`lookups after node ${nd.id} restarted`, T(10000),
      () => seen(lookups.ok >= after + 20, `${lookups.ok - after} lookups since the restart`));
    console.log(`ok - node ${nd.id} killed and restarted; ${lookups.ok} lookups so far, ` +
      `${lookups.failures.length} failed`);
  }
  lookups.stopped = true;
  await loop;

  assert.deepStrictEqual(lookups.wrong, [], 'a lookup returned a wrong route');
  // ali-ons tries every address once per lookup (invokeForNameSrvAtLeastOnce), so a dead node
  // alone never fails a lookup; a restarted node that is not ready yet hands reads to the leader
  // (docs/readiness.md) instead of answering SYSTEM_ERROR, which ali-ons would not retry.
  assert.deepStrictEqual(lookups.failures, [], 'failed lookups');
  console.log(`ok - ${lookups.ok} lookups through ali-ons, none failed`);

  // Every node ends with byte-identical routes.
  for (const topic of [ 'TopicA', 'TopicB' ]) {
    const bodies = [];
    await waitFor(`identical ${topic} routes on all nodes`, T(10000), async () => {
      bodies.length = 0;
      for (const nd of cluster.nodes) {
        const r = await requestOnce(nd.port, CODE.GET_ROUTEINFO_BY_TOPIC, { topic });
        if (r.header.code !== 0) return false;
        bodies.push(r.body.toString('utf8'));
      }
      return bodies.every(b => b === bodies[0]);
    });
  }
  console.log('ok - every node answers identical routes');
}

// The cluster mode is issue 3: a binary that still says so is skipped, not failed.
function clusterUnsupported() {
  const r = childProcess.spawnSync(RAFTNS_BIN, [ '--help' ], { encoding: 'utf8' });
  const text = `${r.stdout || ''}${r.stderr || ''}`;
  return text.split('\n').find(l => l.includes('--config') && l.includes('not supported'));
}

async function run() {
  const why = clusterUnsupported();
  if (why) {
    console.log(`SKIP: raftns has no cluster mode yet: ${why.trim()}`);
    process.exit(0);
  }
  process.exitCode = 1;
  const cluster = new Cluster();
  const cleanups = [];
  process.once('exit', () => cluster.killNow());
  for (const sig of [ 'SIGINT', 'SIGTERM' ]) {
    process.once(sig, () => { cluster.killNow(); process.exit(130); });
  }
  let failed = false;
  try {
    await main(cluster, cleanups);
  } catch (err) {
    failed = true;
    console.error('FAIL:', err && err.stack || err);
  }
  for (const fn of cleanups.reverse()) {
    try {
      await Promise.race([ Promise.resolve(fn()), timeoutAfter(T(3000)) ]);
    } catch (err) {
      // closing is best effort
    }
  }
  for (const nd of cluster.nodes || []) {
    const rc = await nd.stop();
    if (!failed && rc !== 0) {
      failed = true;
      console.error(`FAIL: node ${nd.id} exit code ${rc} after SIGTERM`);
    }
    const log = nd.log();
    if (!failed && /ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer/.test(log)) {
      failed = true;
      console.error(`FAIL: sanitizer report in the log of node ${nd.id}`);
    }
  }
  if (failed) {
    for (const nd of cluster.nodes || []) {
      console.error(`---- node ${nd.id} log ----\n${nd.log().split('\n').slice(-150).join('\n')}` +
        '---- end of log ----');
    }
  }
  cluster.killNow();
  if (!failed) console.log('all ali-ons failover checks passed');
  process.exit(failed ? 1 : 0);
}

run();
