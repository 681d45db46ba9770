'use strict';
// Interop test: the real npm RocketMQ client ali-ons 3.12.0 asks raftns for topic routes.
// Starts one raftns on free ports with a temp data dir, registers two brokers with hand-built
// REGISTER_BROKER frames (one normal, one oneway), then drives ali-ons' MQClientAPI and MQClient
// against it. It does not test producing or consuming (there is no real broker).
// Run: RAFTNS_BIN=build/raftns node tests/interop/test_alions.js (after npm ci in tests/interop).

const assert = require('assert');
const childProcess = require('child_process');
const fs = require('fs');
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
const TOPIC_NOT_EXIST = 17;

// ---------------------------------------------------------------- helpers

const {
  T, seen, timeoutAfter, freePort, waitFor, RawConn, requestOnce, registration,
} = require('./remoting');

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
    await waitFor('raftns to answer GET_BROKER_CLUSTER_INFO', T(15000), async () => {
      if (this.spawnError) throw this.spawnError;
      if (this.exitCode !== undefined) {
        throw new Error(`raftns exited early (code ${this.exitCode})`);
      }
      const r = await requestOnce(this.port, CODE.GET_BROKER_CLUSTER_INFO);
      return seen(r.header.code === 0, r.header);
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

  // SIGTERM and wait; SIGKILL after T(10 s). Returns the exit code (null when killed).
  async stop() {
    if (!this.proc || this.proc.pid === undefined) return null;
    if (this.exitCode !== undefined || this.exitSignal) return this.exitCode;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), T(10000));
    await Promise.race([ this.exited, timeoutAfter(T(15000)) ]);
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
  await waitFor('the oneway registration of broker-b', T(5000), async () => {
    const r = await requestOnce(ns.port, CODE.GET_ROUTEINFO_BY_TOPIC, { topic: 'TopicC' });
    return seen(r.header.code === 0, r.header);
  });
  console.log('ok - registered broker-a (normal) and broker-b (oneway)');

  // MQClientAPI, one name server.
  const api = new MQClientAPI(closedClient({ nameSrv: ns.addr }));
  cleanups.push(() => api.close());
  await api.ready();
  const routeA = await api.getTopicRouteInfoFromNameServer('TopicA', T(3000));
  assert.deepStrictEqual(routeA.brokerDatas.map(d => [ d.brokerName, d.cluster, d.brokerAddrs ]),
    [[ 'broker-a', 'DefaultCluster', { 0: '127.0.0.1:10911' }]]);
  assert.deepStrictEqual(routeA.queueDatas.map(q =>
    [ q.brokerName, q.readQueueNums, q.writeQueueNums, q.perm, q.topicSysFlag ]),
  [[ 'broker-a', 4, 4, 6, 0 ]]);
  const routeB = await api.getTopicRouteInfoFromNameServer('TopicB', T(3000));
  assert.deepStrictEqual(routeB.brokerDatas.map(d => d.brokerName), [ 'broker-a', 'broker-b' ]);
  assert.deepStrictEqual(routeB.queueDatas.map(q => q.brokerName), [ 'broker-a', 'broker-b' ]);
  assert.strictEqual(routeB.brokerDatas[1].brokerAddrs['0'], '127.0.0.1:20911');
  console.log('ok - MQClientAPI.getTopicRouteInfoFromNameServer lists brokers and queues');

  await assert.rejects(api.getTopicRouteInfoFromNameServer('NoSuchTopic', T(3000)), err => {
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
    const r = await multi.getTopicRouteInfoFromNameServer('TopicC', T(3000));
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
      await Promise.race([ Promise.resolve(fn()), timeoutAfter(T(3000)) ]);
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
