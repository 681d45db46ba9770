'use strict';
// Interop rolling-restart test (issue 9 item 4): a 3-node raftns cluster is restarted node by node
// (SIGTERM, restart from its data dir, wait until /status says ready, next node) while ali-ons
// 3.12.0 clients given all three addresses look routes up in a loop and an ali-ons Producer sends
// in a loop to a fake broker written here. The fake broker is a TCP server that registers itself
// with REGISTER_BROKER on every node (again every second, as a broker re-registers after a name
// server restart) and answers HEART_BEAT, SEND_MESSAGE(_V2) and UNREGISTER_CLIENT with SUCCESS.
// It asserts 0 failed lookups and 0 failed sends and prints the counts. It does not kill -9
// (test_alions_failover.js does) and measures no latency.
// Run: RAFTNS_BIN=build/raftns node tests/interop/test_alions_rolling.js (after npm ci here).

const assert = require('assert');
const childProcess = require('child_process');
const fs = require('fs');
const http = require('http');
const net = require('net');
const os = require('os');
const path = require('path');

const {
  timeoutAfter, waitFor, RawConn, requestOnce, registration, freePort,
} = require('./remoting');

let MQClientAPI, Producer, Message;
try {
  MQClientAPI = require('ali-ons/lib/mq_client_api');
  Producer = require('ali-ons').Producer;
  Message = require('ali-ons').Message;
} catch (err) {
  console.error(`FAIL: cannot load ali-ons (run \`npm ci\` in ${__dirname}): ${err.message}`);
  process.exit(1);
}

const RAFTNS_BIN = process.env.RAFTNS_BIN ||
  path.join(__dirname, '..', '..', 'build', 'raftns');
const SANITIZE = /^(on|1|true|yes)$/i.test(process.env.RAFTNS_SANITIZE || '');
const SCALE = (parseFloat(process.env.RAFTNS_TEST_SCALE) || 1) * (SANITIZE ? 3 : 1);
const T = ms => ms * SCALE;
const CODE = {
  SEND_MESSAGE: 10, HEART_BEAT: 34, UNREGISTER_CLIENT: 35, REGISTER_BROKER: 103,
  GET_BROKER_CLUSTER_INFO: 106, SEND_MESSAGE_V2: 310,
};
const TOPICS = [ 'TopicR1', 'TopicR2' ];
const N_LOOKUP_CLIENTS = 3;

async function freePorts(n) {
  // distinct, below the ephemeral range (remoting.js freePort)
  const ports = [];
  for (let i = 0; i < n; i++) ports.push(await freePort());
  return ports;
}

function httpGet(port, urlPath) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, timeout: 2000 }, res => {
      const chunks = [];
      res.on('data', c => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
    });
    req.on('timeout', () => req.destroy(new Error('http timeout')));
    req.on('error', reject);
  });
}

function metric(text, name) {
  const line = text.split('\n').find(l => l.startsWith(`${name} `));
  return line ? Number(line.split(' ').pop()) : 0;
}

// ---------------------------------------------------------------- the cluster

class Node {
  constructor(dir, configPath, id, ports) {
    this.id = id;
    this.configPath = configPath;
    [ this.port, this.raftPort, this.httpPort ] = ports;
    this.dataDir = path.join(dir, `data-${id}`);
    this.logPath = path.join(dir, `node-${id}.log`);
    fs.mkdirSync(this.dataDir);
    this.proc = null;
    this.running = false;
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
    const proc = childProcess.spawn(RAFTNS_BIN, [ '--config', this.configPath, '--id',
      String(this.id), '--data-dir', this.dataDir ], { stdio: [ 'ignore', log, log ] });
    fs.closeSync(log);
    this.proc = proc;
    this.running = true;
    this.exited = new Promise(resolve => proc.once('exit', (code, signal) => {
      if (this.proc === proc) this.running = false;
      resolve({ code, signal });
    }));
    proc.once('error', err => { this.spawnError = err; });
  }

  async status() {
    const r = await httpGet(this.httpPort, '/status');
    return JSON.parse(r.body);
  }

  async metrics() {
    return (await httpGet(this.httpPort, '/metrics')).body;
  }

  // Ready by /status (a node that is not ready answers reads through the leader, so a read
  // answering 0 says nothing about this node).
  async waitReady(timeoutMs) {
    await waitFor(`node ${this.id} /status ready`, timeoutMs, async () => {
      if (this.spawnError) throw this.spawnError;
      if (!this.running) throw new Error(`node ${this.id} exited`);
      return (await this.status()).ready === true;
    });
  }

  // SIGTERM and wait; SIGKILL after the deadline. Returns { code, signal }.
  async stop(timeoutMs) {
    if (!this.proc || !this.running) return { code: 0, signal: null };
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), timeoutMs);
    const res = await this.exited;
    clearTimeout(timer);
    return res;
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
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'raftns-interop-rolling-'));
    const configPath = path.join(this.dir, 'cluster.json');
    const ports = await freePorts(3 * n);
    this.nodes = [];
    for (let i = 0; i < n; i++) {
      this.nodes.push(new Node(this.dir, configPath, i + 1, ports.slice(3 * i, 3 * i + 3)));
    }
    fs.writeFileSync(configPath, JSON.stringify({
      secret: 'raftns-interop-secret', electionTimeoutMs: 1000, heartbeatMs: 100,
      snapshotThreshold: 4096, nodes: this.nodes.map(nd => nd.entry()), namesrv: {},
    }, null, 2));
  }

  async leaderId() {
    for (const nd of this.nodes) {
      try {
        const st = await nd.status();
        if (st.role === 'leader') return nd.id;
      } catch (err) {
        // down
      }
    }
    return 0;
  }

  killNow() {
    for (const nd of this.nodes || []) nd.killNow();
    if (this.dir) {
      fs.rmSync(this.dir, { recursive: true, force: true });
      this.dir = null;
    }
  }
}

// ---------------------------------------------------------------- the fake broker

// A broker as far as the name servers and the producer can tell: it registers with every node
// and answers the producer's requests. It stores nothing.
class FakeBroker {
  constructor(name, port) {
    this.name = name;
    this.port = port;
    this.addr = `127.0.0.1:${port}`;
    this.conns = new Map(); // node id -> RawConn
    this.sockets = new Set();
    this.sent = 0;
    this.registerFailures = [];
    this.stopped = false;
  }

  async listen() {
    this.server = net.createServer(sock => this.serve(sock));
    await new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, '127.0.0.1', resolve);
    });
  }

  serve(sock) {
    this.sockets.add(sock);
    sock.on('close', () => this.sockets.delete(sock));
    sock.on('error', () => {});
    let buf = Buffer.alloc(0);
    sock.on('data', data => {
      buf = Buffer.concat([ buf, data ]);
      while (buf.length >= 8) {
        const len = buf.readUInt32BE(0);
        if (buf.length < 4 + len) return;
        const hlen = buf.readUInt32BE(4) & 0xFFFFFF;
        const header = JSON.parse(buf.slice(8, 8 + hlen).toString('utf8'));
        buf = buf.slice(4 + len);
        this.answer(sock, header);
      }
    });
  }

  answer(sock, req) {
    if (req.flag & 2) return; // oneway
    const ext = {};
    if (req.code === CODE.SEND_MESSAGE || req.code === CODE.SEND_MESSAGE_V2) {
      // What ali-ons' sendMessage reads from the reply: msgId, queueId, queueOffset.
      const queueId = (req.extFields || {}).e || (req.extFields || {}).queueId || '0';
      const offset = this.sent++;
      ext.msgId = `7F000001${this.port.toString(16).padStart(8, '0')}${offset.toString(16)
        .padStart(16, '0')}`.toUpperCase();
      ext.queueId = String(queueId);
      ext.queueOffset = String(offset);
    }
    const h = Buffer.from(JSON.stringify({
      code: 0, extFields: ext, flag: 1, language: 'JAVA', opaque: req.opaque,
      serializeTypeCurrentRPC: 'JSON', version: 479,
    }), 'utf8');
    const prefix = Buffer.alloc(8);
    prefix.writeUInt32BE(4 + h.length, 0);
    prefix.writeUInt32BE(h.length, 4);
    sock.write(Buffer.concat([ prefix, h ]));
  }

  async register(node) {
    let c = this.conns.get(node.id);
    if (!c || c.closed) {
      c = new RawConn(node.port);
      await c.open();
      c.sock.on('error', () => {});
      this.conns.set(node.id, c);
    }
    const { ext, body } = registration(this.name, this.addr, TOPICS);
    return c.send(CODE.REGISTER_BROKER, ext, body, T(10000));
  }

  // Re-registers with every node once a second (an unchanged registration: a heartbeat).
  async loop(nodes) {
    while (!this.stopped) {
      await Promise.all(nodes.map(async nd => {
        try {
          const r = await this.register(nd);
          if (r.header.code !== 0) {
            this.registerFailures.push(`node ${nd.id}: ${r.header.code} ${r.header.remark}`);
          }
        } catch (err) {
          // the node is down or restarting: the next round tries again
        }
      }));
      await timeoutAfter(1000);
    }
  }

  close() {
    this.stopped = true;
    for (const c of this.conns.values()) c.close();
    for (const s of this.sockets) s.destroy();
    if (this.server) this.server.close();
  }
}

// ---------------------------------------------------------------- the clients

const quietLogger = {
  info() {}, warn() {}, debug() {},
  error(err) { if (process.env.VERBOSE) console.error(err); },
};

function checkRoute(route, broker) {
  const names = route.brokerDatas.map(d => d.brokerName);
  const addrs = route.brokerDatas.map(d => d.brokerAddrs['0']);
  return JSON.stringify(names) === JSON.stringify([ broker.name ]) &&
    JSON.stringify(addrs) === JSON.stringify([ broker.addr ]);
}

class Counts {
  constructor() {
    this.ok = 0;
    this.failures = [];
    this.wrong = [];
  }

  fail(what, err) {
    this.failures.push(`${new Date().toISOString()} ${what}: ${err.name} ${err.code}: ` +
      err.message);
  }
}

async function lookupLoop(api, broker, counts, state) {
  let i = 0;
  while (!state.stopped) {
    const topic = TOPICS[i++ % TOPICS.length];
    try {
      const route = await api.getTopicRouteInfoFromNameServer(topic, 3000);
      if (!checkRoute(route, broker)) counts.wrong.push(JSON.stringify(route));
      counts.ok++;
    } catch (err) {
      counts.fail(`lookup ${topic}`, err);
    }
    await timeoutAfter(10);
  }
}

async function sendLoop(producer, counts, state) {
  let i = 0;
  while (!state.stopped) {
    const msg = new Message(TOPICS[0], 'rolling', Buffer.from(`message ${i++}`));
    try {
      const r = await producer.send(msg);
      if (r.sendStatus !== 'SEND_OK') throw new Error(`sendStatus ${r.sendStatus}`);
      counts.ok++;
    } catch (err) {
      counts.fail('send', err);
    }
    await timeoutAfter(10);
  }
}

// ---------------------------------------------------------------- the test

async function main(cluster, cleanups) {
  await cluster.create(3);
  for (const nd of cluster.nodes) nd.start();
  for (const nd of cluster.nodes) await nd.waitReady(T(30000));
  console.log('ok - three nodes ready');

  const [ brokerPort ] = await freePorts(1);
  const broker = new FakeBroker('broker-r', brokerPort);
  await broker.listen();
  cleanups.push(() => broker.close());
  for (const nd of cluster.nodes) {
    await waitFor(`broker registered with node ${nd.id}`, T(20000), async () =>
      (await broker.register(nd)).header.code === 0);
  }
  const brokerLoop = broker.loop(cluster.nodes);
  cleanups.push(() => brokerLoop);
  for (const nd of cluster.nodes) {
    await waitFor(`${TOPICS[0]} routable on node ${nd.id}`, T(5000), async () =>
      (await requestOnce(nd.port, 105, { topic: TOPICS[0] })).header.code === 0);
  }
  console.log(`ok - fake broker ${broker.addr} registered with every node`);

  const addrs = cluster.nodes.map(nd => nd.addr);
  const state = { stopped: false };
  const lookups = new Counts();
  const sends = new Counts();
  const refreshes = new Counts(); // the producer's own periodic route lookups
  const loops = [];
  for (let k = 0; k < N_LOOKUP_CLIENTS; k++) {
    const api = new MQClientAPI({ httpclient: {}, logger: quietLogger, nameSrv: addrs });
    api.on('error', () => {}); // connection errors to a stopped node are expected
    cleanups.push(() => api.close());
    await api.ready();
    loops.push(lookupLoop(api, broker, lookups, state));
  }
  const producer = new Producer({
    httpclient: {}, logger: quietLogger, nameSrv: addrs, producerGroup: 'GID_RAFTNS_ROLLING',
    instanceName: `raftns-rolling-${process.pid}`, pollNameServerInteval: 200,
    heartbeatBrokerInterval: 1000,
  });
  producer.on('error', err => {
    if (/updateAllTopicRouterInfo|RouteInfo|name ?server/i.test(err.message)) {
      refreshes.fail('producer route refresh', err);
    } else if (process.env.VERBOSE) {
      console.error('producer error:', err.message);
    }
  });
  cleanups.push(async () => {
    await producer.close(); // drops every listener; late connection errors must not throw
    producer.on('error', () => {});
  });
  await producer.ready();
  loops.push(sendLoop(producer, sends, state));
  cleanups.push(() => { state.stopped = true; return Promise.all(loops); });
  await waitFor('first lookups and sends', T(10000), () => lookups.ok >= 30 && sends.ok >= 30);
  console.log('ok - lookups and sends running');

  const forwardedBefore = {};
  for (const nd of cluster.nodes) {
    forwardedBefore[nd.id] = metric(await nd.metrics(), 'raftns_forwarded_reads_total');
  }
  const restarts = [];
  for (const nd of cluster.nodes) {
    const wasLeader = (await cluster.leaderId()) === nd.id;
    const { code, signal } = await nd.stop(T(15000));
    assert.strictEqual(code, 0, `node ${nd.id} exit after SIGTERM: code ${code} signal ${signal}`);
    nd.start();
    const t0 = Date.now();
    await nd.waitReady(T(30000));
    restarts.push(`node ${nd.id}${wasLeader ? ' (leader)' : ''} ready ${Date.now() - t0} ms ` +
      'after its restart');
    const l0 = lookups.ok;
    const s0 = sends.ok;
    await waitFor(`lookups and sends after node ${nd.id} restarted`, T(10000),
      () => lookups.ok >= l0 + 30 && sends.ok >= s0 + 30);
    console.log(`ok - node ${nd.id}${wasLeader ? ' (leader)' : ''} restarted; ${lookups.ok} ` +
      `lookups (${lookups.failures.length} failed), ${sends.ok} sends ` +
      `(${sends.failures.length} failed) so far`);
  }
  state.stopped = true;
  await Promise.all(loops);
  const forwarded = [];
  for (const nd of cluster.nodes) {
    // a restarted node's counter starts at 0
    forwarded.push(`node ${nd.id}: ${metric(await nd.metrics(), 'raftns_forwarded_reads_total')}`);
  }

  console.log(`counts: lookups ok ${lookups.ok} failed ${lookups.failures.length}; ` +
    `producer route refreshes failed ${refreshes.failures.length}; sends ok ${sends.ok} failed ` +
    `${sends.failures.length}; broker re-registrations refused ${broker.registerFailures.length}`);
  console.log(`restarts: ${restarts.join('; ')}`);
  console.log(`reads forwarded to the leader since each node's last start: ${forwarded.join(', ')}`);
  const show = list => list.slice(0, 20).join('\n  ');
  assert.deepStrictEqual(lookups.wrong, [], 'a lookup returned a wrong route');
  assert.strictEqual(lookups.failures.length, 0, `failed lookups:\n  ${show(lookups.failures)}`);
  assert.strictEqual(refreshes.failures.length, 0,
    `failed producer route refreshes:\n  ${show(refreshes.failures)}`);
  assert.strictEqual(sends.failures.length, 0, `failed sends:\n  ${show(sends.failures)}`);
  console.log('ok - 0 failed lookups, 0 failed sends through a rolling restart');
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
      await Promise.race([ Promise.resolve(fn()), timeoutAfter(T(5000)) ]);
    } catch (err) {
      // closing is best effort
    }
  }
  for (const nd of cluster.nodes || []) {
    const { code } = await nd.stop(T(15000));
    if (!failed && code !== 0) {
      failed = true;
      console.error(`FAIL: node ${nd.id} exit code ${code} after SIGTERM`);
    }
    if (!failed && /ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer/.test(nd.log())) {
      failed = true;
      console.error(`FAIL: sanitizer report in the log of node ${nd.id}`);
    }
  }
  if (failed) {
    for (const nd of cluster.nodes || []) {
      console.error(`---- node ${nd.id} log ----\n${nd.log().split('\n').slice(-100).join('\n')}` +
        '---- end of log ----');
    }
  }
  cluster.killNow();
  if (!failed) console.log('all ali-ons rolling-restart checks passed');
  process.exit(failed ? 1 : 0);
}

run();
