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
const NO_PERMISSION = 16;
const ACCOUNTS = [
  { accessKey: 'ons-reader', secretKey: 'reader-secret-1', role: 'reader' },
  { accessKey: 'ons-broker', secretKey: 'broker-secret-2', role: 'broker' },
];

// ---------------------------------------------------------------- helpers

const {
  T, seen, timeoutAfter, freePort, waitFor, RawConn, requestOnce, registration,
} = require('./remoting');


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
    await waitFor('raftns to answer a signed GET_BROKER_CLUSTER_INFO', T(15000), async () => {
      if (this.spawnError) throw this.spawnError;
      if (this.exitCode !== undefined) {
        throw new Error(`raftns exited early (code ${this.exitCode})`);
      }
      const r = await requestOnce(this.port, CODE.GET_BROKER_CLUSTER_INFO,
        sign({}, null, ACCOUNTS[0].accessKey, ACCOUNTS[0].secretKey));
      return seen(r.header.code === 0, r.header);
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
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), T(10000));
    await Promise.race([ this.exited, timeoutAfter(T(15000)) ]);
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
  const route = await api.getTopicRouteInfoFromNameServer('TopicA', T(3000));
  assert.deepStrictEqual(route.brokerDatas.map(d => [ d.brokerName, d.brokerAddrs ]),
    [[ 'broker-a', { 0: '127.0.0.1:10911' }]]);
  await assert.rejects(api.getTopicRouteInfoFromNameServer('NoSuchTopic', T(3000)),
    err => err.code === 17);
  console.log('ok - ali-ons route lookups with accessKey/secretKey');

  // A wrong secret and no credentials at all are refused with code 16.
  const before = refusals(await httpGet(ns.httpPort, '/metrics'));
  for (const [ what, creds ] of [[ 'wrong secret', WRONG ], [ 'no credentials', {} ]]) {
    const bad = new MQClientAPI(client(Object.assign({ nameSrv: ns.addr }, creds)));
    cleanups.push(() => bad.close());
    await bad.ready();
    await assert.rejects(bad.getTopicRouteInfoFromNameServer('TopicA', T(3000)), err => {
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
  if (!failed) console.log('all ali-ons ACL interop checks passed');
  process.exit(failed ? 1 : 0);
}

run();
