"""The fault suite's controller workload (docs/controller.md): simulated RocketMQ 5 broker groups
in controller mode, on the wire. Per group, brokers that are admitted (1012, 1013), register
(1003), heartbeat every node each second (904, oneway, on their own connections, as a 5.x broker
does), poll 1004, ask for an election (1002) when the poll shows no master, and, while they
think they are master, alter their SyncStateSet (1001) - now and then from a stale master epoch,
as a master racing its own demotion would. They die (all connections close, or they fall silent
with the connections open, for longer than the failover bound) and come back with the id they
were given. A listener on each
broker's address records every NOTIFY_BROKER_ROLE_CHANGED (1008). A poller records each node's
controller table from /status. Everything goes into history.jsonl (format: README.md, workload
`controller`); checker_controller.py judges it. It injects no raftns faults (nemesis.py does).

Not imported from tests/process/test_controller.py (its CtlBroker): that module imports
tests/process/harness.py, whose name this suite's harness.py already takes."""

import json
import socket
import struct
import threading
import time

import client
import nsclient as ns

ALTER, ELECT, REGISTER, REPLICA_INFO, NEXT_ID, APPLY_ID = 1001, 1002, 1003, 1004, 1012, 1013
NOTIFY = 1008
NOT_LEADER = 2007
MASTER_STILL_EXIST, MASTER_NOT_AVAILABLE = 2011, 2004
SYSTEM_ERROR = 1
CLUSTER = "jepsen"
REQUEST_TIMEOUT = 3.0  # a 5.x broker's controller request timeout (CONTROLLER.md §3.13)
# The namesrv settings the workload runs the cluster with (harness.py writes them into the
# cluster file): shorter scans than the defaults, so a silent master is replaced within seconds.
SETTINGS = {"enableControllerInNamesrv": "true", "scanNotActiveBrokerInterval": "1000",
            "scanInactiveMasterInterval": "500"}
HEARTBEAT_TIMEOUT_MS = 3000
# Fixed in src/controller/controller.c: a new leader whose process started less than WARM_MS
# ago waits until then before judging masters; retries of a failed election wait RETRY_WAIT_MS.
WARM_MS, RETRY_WAIT_MS = 10000, 3000
# After the heal, deaths wait out the checker's fault margin (2 election timeouts + 5 s).
QUIET_SETTLE_S = 8.0


def failover_bound_ms(election_ms):
    """How long after its master died (or after the last fault around that) a group with a
    live SyncStateSet member may go without a new master: a silent master's heartbeat timeout,
    one expiry scan, one inactive-master scan and broker heartbeat period, two raft election
    timeouts, one election retry. The checker adds WARM_MS when a node process started within
    WARM_MS before the deadline (that node may be the leader that judges). Stated in the config
    event as ctl_failover_bound_ms and ctl_warm_ms."""
    return (HEARTBEAT_TIMEOUT_MS + int(SETTINGS["scanNotActiveBrokerInterval"]) +
            int(SETTINGS["scanInactiveMasterInterval"]) + 1000 + 2 * election_ms +
            RETRY_WAIT_MS)


class Listener(threading.Thread):
    """A broker's remoting port: records every 1008 frame it receives (any broker state)."""

    def __init__(self, host, on_frame):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.addr = "%s:%d" % (host, self.sock.getsockname()[1])
        self.on_frame = on_frame
        self.closing = False
        self.start()

    def run(self):
        while not self.closing:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.read, args=(c,), daemon=True).start()

    def read(self, c):
        buf = b""
        with c:
            while not self.closing:
                try:
                    data = c.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while len(buf) >= 4:
                    (n,) = struct.unpack(">I", buf[:4])
                    if len(buf) < 4 + n:
                        break
                    try:
                        f = ns.decode_frame(buf[4:4 + n])
                    except (ns.ProtocolError, ValueError):
                        return
                    buf = buf[4 + n:]
                    if f.code == NOTIFY:
                        self.on_frame(f)

    def close(self):
        self.closing = True
        try:
            self.sock.close()
        except OSError:
            pass


def _int(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def parse_reply(r):
    """The completion value of a controller reply: code, and the ext fields and SyncStateSet
    body the checker reads."""
    ext = r.ext or {}
    out = {"code": r.code}
    for k in ("masterBrokerId", "masterEpoch", "syncStateSetEpoch", "newSyncStateSetEpoch",
              "nextBrokerId"):
        if k in ext:
            out[k] = _int(ext[k])
    if r.body:
        try:
            body = ns.loads_tolerant(r.body)
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("syncStateSet"), list):
            out["set"] = sorted(int(x) for x in body["syncStateSet"])
            if "syncStateSetEpoch" in body:
                out["bodySyncStateSetEpoch"] = _int(body["syncStateSetEpoch"])
    return out


class SimBroker:
    """One broker of a group: its address (listener), controller id, connections and view."""

    def __init__(self, work, group, idx):
        self.work = work
        self.group = group
        self.idx = idx
        self.listener = Listener(work.cluster.net.client_ip, self.on_notify)
        self.addr = self.listener.addr
        self.code = "%s;%d" % (self.addr, 1000 + idx)
        self.id = None
        self.up = False
        self.registered = False
        self.conns = {}  # node id -> request connection
        self.hb_conns = {}  # node id -> heartbeat connection
        self.hb_lock = threading.Lock()
        self.offset = 0
        self.lock = threading.Lock()  # the view: the listener thread updates it too
        self.master = None
        self.epoch = 0
        self.set = []
        self.set_epoch = 0
        self.leader_hint = 0

    # -- view --------------------------------------------------------------------------------
    def adopt(self, master, epoch, set_=None, set_epoch=None):
        """Takes a role only from a newer master epoch (CONTROLLER.md §7.5)."""
        with self.lock:
            if epoch is None or epoch < self.epoch:
                return
            if epoch > self.epoch or master is not None:
                self.master, self.epoch = master, epoch
            if set_ is not None and set_epoch is not None and set_epoch >= self.set_epoch:
                self.set, self.set_epoch = list(set_), set_epoch

    def is_master(self):
        with self.lock:
            return self.id is not None and self.master == self.id

    def on_notify(self, f):
        ext = f.ext or {}
        v = {"group": self.group, "broker": self.idx, "id": self.id,
             "masterBrokerId": _int(ext.get("masterBrokerId")),
             "masterEpoch": _int(ext.get("masterEpoch")),
             "syncStateSetEpoch": _int(ext.get("syncStateSetEpoch")), "up": self.up}
        self.work.rec.event({"process": "harness", "type": "info", "f": "ctl-notify",
                             "workload": "controller", "value": v})
        if self.up and v["masterBrokerId"] is not None:
            self.adopt(v["masterBrokerId"], v["masterEpoch"])

    # -- wire --------------------------------------------------------------------------------
    def hb_ext(self):
        with self.lock:
            epoch = self.epoch
        return {"clusterName": CLUSTER, "brokerAddr": self.addr, "brokerName": self.group,
                "brokerId": str(self.id), "epoch": str(epoch), "maxOffset": str(self.offset),
                "confirmOffset": str(self.offset),
                "heartbeatTimeoutMills": str(HEARTBEAT_TIMEOUT_MS),
                "electionPriority": "2147483647"}

    def beat(self, rng):
        """One 904 (oneway) to every member node over this broker's heartbeat connections; a
        broken connection is dropped and made again next time."""
        with self.hb_lock:
            if not self.up or self.id is None:
                return
            self.offset += rng.randrange(0, 100)
            ext = self.hb_ext()
            for nd in self.work.cluster.member_nodes():
                c = self.hb_conns.get(nd.id)
                try:
                    if c is None:
                        c = client.connect(nd.client_addr)
                        if c is None:
                            continue
                        c.sock.settimeout(2.0)
                        self.hb_conns[nd.id] = c
                    c.request(ns.BROKER_HEARTBEAT, ext, oneway=True)
                except (OSError, ns.ConnectionClosed):
                    c.close()
                    self.hb_conns.pop(nd.id, None)

    def node_order(self):
        nodes = self.work.cluster.member_nodes()
        k = self.leader_hint % len(nodes)
        return nodes[k:] + nodes[:k]

    def call(self, proc, f, code, ext, value, body=b"", write=True):
        """One request to the node this broker takes for the leader; on 2007 or no answer the
        next node is tried on the next call (a 5.x broker finds the leader through 1005)."""
        nd = self.node_order()[0]
        value = dict(value, group=self.group, broker=self.idx)

        def fn():
            c = self.conns.get(nd.id)
            if c is None or c.eof:
                c = client.connect(nd.client_addr)
                if c is None:
                    return client.Result("fail", error="connect failed")
                self.conns[nd.id] = c
            try:
                r = c.request(code, ext, body, timeout=REQUEST_TIMEOUT)
            except (TimeoutError, socket.timeout, ns.ConnectionClosed, OSError,
                    ns.ProtocolError) as e:
                c.close()
                self.conns.pop(nd.id, None)
                return client.Result("info" if write else "fail", error="transport: %s" % e)
            v = parse_reply(r)
            if r.code == 0 or (code == ELECT and r.code in (MASTER_STILL_EXIST,
                                                            MASTER_NOT_AVAILABLE)):
                return client.Result("ok", value=v)
            # SYSTEM_ERROR: not committed in time, the outcome is unknown
            kind = "info" if write and r.code == SYSTEM_ERROR else "fail"
            res = client.Result(kind, error="code %d: %s" % (r.code, r.remark))
            res.value = v
            return res
        res = proc.op(f, value, nd.id, fn)
        if res.type != "ok":
            self.leader_hint += 1
        return res

    def close_conns(self):
        for c in self.conns.values():
            c.close()
        self.conns = {}
        with self.hb_lock:
            for c in self.hb_conns.values():
                c.close()
            self.hb_conns = {}


class ControllerLoad:
    """Owns the groups' threads, the heartbeat thread and the /status poller."""

    def __init__(self, cluster, rec, rng, stop_ev, quiet_ev, groups=2, per_group=3):
        self.cluster = cluster
        self.rec = rec
        self.rng = rng
        self.stop_ev = stop_ev
        self.quiet_ev = quiet_ev
        self.groups = ["ctl-g%d" % i for i in range(groups)]
        self.per_group = per_group
        self.brokers = []
        self.threads = []
        # brokers keep dying this long into the quiet period (the runner sets it): a failover
        # with no raftns fault around it is judged there against the bare bound
        self.quiet_deaths_s = 0.0

    def start(self, spawn):
        import random
        for g in self.groups:
            bs = [SimBroker(self, g, i) for i in range(self.per_group)]
            self.brokers += bs
            spawn("ctl-" + g, self.group_loop, g, bs, random.Random(self.rng.random()))
        spawn("ctl-beat", self.beat_loop, random.Random(self.rng.random()))
        spawn("ctl-status", self.status_loop)

    def close(self):
        for b in self.brokers:
            b.close_conns()
            b.listener.close()

    # -- heartbeats and /status ------------------------------------------------------------
    def beat_loop(self, rng):
        while not self.stop_ev.is_set():
            for b in self.brokers:
                b.beat(rng)
            self.stop_ev.wait(1.0)

    def beat_until(self, done):
        """Keeps every live broker heartbeating until done() (across the final tables)."""
        import random
        rng = random.Random(0)
        while not done():
            for b in self.brokers:
                b.beat(rng)
            time.sleep(1.0)

    def status_loop(self):
        """Each node's controller table from /status, when the node is ready (not diverged)
        and answers: an observation of its applied state at applied_index."""
        import workloads as wl
        p = wl.Proc(self.rec, "controller")
        while not self.stop_ev.is_set():
            for nd in self.cluster.member_nodes():
                if nd.up():
                    p.op("ctl-status", {}, nd.id, lambda: self._status(nd))
            self.stop_ev.wait(0.4)

    @staticmethod
    def _status(nd):
        try:
            st = nd.status()
        except OSError as e:
            return client.Result("fail", error=str(e))
        if not st.get("ready") or st.get("diverged"):
            return client.Result("fail", error="not ready" if not st.get("ready") else
                                 "diverged")
        ctl = st.get("controller") or {}
        groups = {}
        for g in ctl.get("groups") or []:
            groups[g.get("name")] = {"master": g.get("master"),
                                     "masterEpoch": g.get("masterEpoch"),
                                     "syncStateSetEpoch": g.get("syncStateSetEpoch"),
                                     "set": sorted(g.get("syncStateSet") or [])}
        return client.Result("ok", value={"applied_index": st.get("applied_index"),
                                          "groups": groups})

    # -- one group -------------------------------------------------------------------------
    def lifecycle(self, f, b, **extra):
        v = {"group": b.group, "broker": b.idx, "id": b.id, "addr": b.addr}
        v.update(extra)
        self.rec.event({"process": "harness", "type": "info", "f": f, "workload": "controller",
                        "value": v})

    def bring_up(self, b):
        b.close_conns()
        b.registered = False
        with b.lock:
            b.master = None  # fenced until the controller says otherwise (§7.2)
        b.up = True
        self.lifecycle("ctl-up", b)

    def kill(self, b, mode):
        b.up = False
        self.lifecycle("ctl-down", b, mode=mode)
        if mode == "close":
            b.close_conns()  # like a SIGKILLed broker: every connection closes at once
        else:
            for c in b.conns.values():
                c.close()
            b.conns = {}  # requests stop; the heartbeat connections stay open, silent

    def admit(self, p, b):
        names = {"clusterName": CLUSTER, "brokerName": b.group}
        r = b.call(p, "next-id", NEXT_ID, names, {}, write=False)
        if r.type != "ok" or r.value.get("nextBrokerId") is None:
            return
        nid = r.value["nextBrokerId"]
        r = b.call(p, "apply-id", APPLY_ID, dict(names, appliedBrokerId=str(nid),
                                                 registerCheckCode=b.code), {"id": nid})
        # refused (the id was taken meanwhile) or unknown: 1012 again next time (a retried
        # 1013 with the same check code is idempotent)
        if r.type == "ok":
            b.id = nid

    def register(self, p, b):
        r = b.call(p, "register", REGISTER, {"clusterName": CLUSTER, "brokerName": b.group,
                                             "brokerId": str(b.id), "brokerAddress": b.addr},
                   {"id": b.id})
        if r.type != "ok":
            return
        b.registered = True
        v = r.value
        b.adopt(v.get("masterBrokerId"), v.get("masterEpoch"), v.get("set"),
                v.get("bodySyncStateSetEpoch"))
        if v.get("masterBrokerId") is None:
            self.elect(p, b)

    def elect(self, p, b):
        r = b.call(p, "elect", ELECT, {"clusterName": CLUSTER, "brokerName": b.group,
                                       "brokerId": str(b.id), "designateElect": "false"},
                   {"id": b.id})
        v = r.value if isinstance(r.value, dict) else {}
        if r.type == "ok" and v.get("masterBrokerId") is not None:
            set_epoch = v.get("syncStateSetEpoch")
            b.adopt(v["masterBrokerId"], v.get("masterEpoch"),
                    v.get("set") if v.get("code") == 0 else None, set_epoch)

    def poll(self, p, b):
        r = b.call(p, "replica-info", REPLICA_INFO, {"brokerName": b.group}, {"id": b.id},
                   write=False)
        if r.type != "ok":
            return
        v = r.value
        with b.lock:
            newer = v.get("masterEpoch", 0) > b.epoch
        b.adopt(v.get("masterBrokerId"), v.get("masterEpoch"), v.get("set"),
                v.get("bodySyncStateSetEpoch"))
        if newer and v.get("masterBrokerId") is None:
            self.elect(p, b)

    def alter(self, p, b, peers, rng):
        """The master's SyncStateSet change: itself plus a random pick of the group's live
        brokers (a shrink or an expand). One in four carries a stale master epoch."""
        want = sorted({b.id} | {o.id for o in peers if o.up and o.id is not None
                                and o is not b and rng.random() < 0.75})
        with b.lock:
            epoch, set_epoch, cur = b.epoch, b.set_epoch, list(b.set)
        if want == sorted(cur):
            return
        stale = rng.random() < 0.25
        sent = epoch
        if stale:
            sent = epoch - 1 if epoch > 1 and rng.random() < 0.7 else epoch + 1
        body = json.dumps({"syncStateSet": want, "syncStateSetEpoch": set_epoch}).encode()
        r = b.call(p, "alter", ALTER, {"brokerName": b.group, "masterBrokerId": str(b.id),
                                       "masterEpoch": str(sent)},
                   {"id": b.id, "master": b.id, "masterEpoch": sent, "set": want,
                    "syncStateSetEpoch": set_epoch, "stale": stale}, body)
        if r.type == "ok" and not stale:
            v = r.value
            b.adopt(b.id, epoch, v.get("set"), v.get("newSyncStateSetEpoch"))

    def group_loop(self, group, bs, rng):
        import workloads as wl
        p = wl.Proc(self.rec, "controller")
        restart_at = {}
        last_death = time.monotonic()
        next_poll = {b.idx: 0.0 for b in bs}
        next_alter = {b.idx: 0.0 for b in bs}
        # staggered first starts: the first broker becomes the group's first master
        for k, b in enumerate(bs):
            restart_at[b.idx] = time.monotonic() + 1.5 * k
        quiet_at, quiet_silent = None, False
        while not self.stop_ev.is_set():
            now = time.monotonic()
            if quiet_at is None and self.quiet_ev.is_set():
                quiet_at = now
            dying = quiet_at is None or now - quiet_at < self.quiet_deaths_s
            for b in rng.sample(bs, len(bs)):
                if self.stop_ev.is_set():
                    break
                if not b.up:
                    if now >= restart_at[b.idx]:
                        self.bring_up(b)
                    continue
                if b.id is None:
                    self.admit(p, b)
                    if b.id is None:
                        continue
                    b.beat(rng)  # heartbeats before the first registration (§7.2)
                if not b.registered:
                    self.register(p, b)
                    continue
                if now >= next_poll[b.idx]:
                    next_poll[b.idx] = now + rng.uniform(1.0, 3.0)
                    self.poll(p, b)
                if b.is_master() and now >= next_alter[b.idx]:
                    next_alter[b.idx] = now + rng.uniform(1.0, 3.0)
                    self.alter(p, b, bs, rng)
            # In the quiet period deaths start once the heal's fault margin is over; the
            # first is the master falling silent: only its heartbeat timeout can replace it
            # within the bound (its return, which closes its connections, comes later).
            settled = quiet_at is None or now - quiet_at >= QUIET_SETTLE_S
            if dying and settled and (now - last_death > rng.uniform(4, 12) or
                                      (quiet_at is not None and not quiet_silent)):
                live = [b for b in bs if b.up and b.registered]
                masters = [b for b in live if b.is_master()]
                if quiet_at is not None and not quiet_silent and masters and len(live) >= 2:
                    quiet_silent = True
                    victim, mode = masters[0], "silent"
                elif len(live) >= 2 and (quiet_at is None or quiet_silent):
                    victim = masters[0] if masters and rng.random() < 0.7 else rng.choice(live)
                    mode = "close" if rng.random() < 0.6 else "silent"
                else:
                    victim = None
                if victim is not None:
                    self.kill(victim, mode)
                    # a silent broker stays away longer than the failover bound, so that only
                    # its heartbeat timeout (not its return, which closes its connections)
                    # can replace it in time
                    restart_at[victim.idx] = time.monotonic() + (
                        rng.uniform(2, 8) if mode == "close" else rng.uniform(11, 16))
                    last_death = time.monotonic()
            self.stop_ev.wait(rng.uniform(0.2, 0.5))
