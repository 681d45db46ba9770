"""The fault suite's client workloads (broker set, kv register, route reads, liveness), each a set of
threads running in the client namespace against random nodes and writing invoke/complete events to
history.jsonl in the format of README.md. They never judge a result (checker.py does) and never
inject faults (nemesis.py does)."""

import threading
import time

import client
from history import HistoryWriter


class Recorder:
    """Stamps events with time.monotonic_ns() under one lock so file order == time order."""

    def __init__(self, path):
        self.w = HistoryWriter(path)
        self.lock = threading.Lock()
        self.next_process = 0
        self.counts = {}
        self.closed = False

    def event(self, ev):
        with self.lock:
            ev["time"] = time.monotonic_ns()
            if self.closed:  # interrupted run: late events of daemon threads are dropped
                return ev
            self.w.write(ev)
            key = "%s/%s" % (ev.get("workload", ev.get("process")), ev["type"])
            self.counts[key] = self.counts.get(key, 0) + 1
        return ev

    def new_process(self):
        with self.lock:
            self.next_process += 1
            return self.next_process

    def info(self, process, f, value=None):
        ev = {"process": process, "type": "info", "f": f}
        if value is not None:
            ev["value"] = value
        return self.event(ev)

    def close(self):
        with self.lock:
            if not self.closed:
                self.closed = True
                self.w.close()


class Proc:
    """One logical client: a process id that is replaced after an `info` completion (its old
    operation may still be in flight, so the id must not issue another)."""

    def __init__(self, rec, workload):
        self.rec = rec
        self.workload = workload
        self.pid = rec.new_process()

    def op(self, f, value, node, fn):
        """Records invoke, runs fn() -> client.Result, records the completion."""
        self.rec.event({"process": self.pid, "type": "invoke", "f": f, "value": value,
                        "node": "n%d" % node, "workload": self.workload})
        try:
            res = fn()
        except Exception as e:  # noqa: BLE001 - any client bug is an unknown outcome
            res = client.Result("info", error="client exception: %r" % e)
        ev = {"process": self.pid, "type": res.type, "f": f, "node": "n%d" % node,
              "workload": self.workload,
              "value": res.value if res.value is not None else value}
        if res.error:
            ev["error"] = res.error
        if getattr(res, "served_by", None) is not None:
            ev["served_by"] = res.served_by
        self.rec.event(ev)
        if res.type == "info":
            self.pid = self.rec.new_process()
        return res


class Workloads:
    """Owns every client thread. cluster gives addresses; rng is a seeded random.Random used only
    to derive per-thread seeds (thread scheduling is not reproducible, the fault schedule is)."""

    def __init__(self, cluster, rec, rng, names=("broker-set", "kv", "route", "liveness"),
                 kv_keys=3, kv_clients=4, brokers=6, liveness_brokers=4, pinned_brokers=3,
                 liveness_timeout_ms=10000, broker_timeout_ms=30000):
        self.cluster = cluster
        self.rec = rec
        self.rng = rng
        self.names = set(names)
        self.kv_keys = ["k%d" % i for i in range(kv_keys)]
        self.kv_clients = kv_clients
        self.brokers = brokers
        self.liveness_brokers = liveness_brokers
        self.pinned_brokers = pinned_brokers
        self.liveness_timeout_ms = liveness_timeout_ms
        self.broker_timeout_ms = broker_timeout_ms
        self.stop_ev = threading.Event()
        self.quiet_ev = threading.Event()  # no new broker lifecycle changes after this
        self.threads = []
        self.live_brokers = []  # client.Broker objects still heartbeating at the end
        self.silent = []  # stopped brokers whose connections stay open until the run ends
        self.silent_lock = threading.Lock()
        self.controller = None  # workload_controller.ControllerLoad when "controller" runs

    # -- helpers ----------------------------------------------------------------------------
    def nodes(self):
        return [nd for nd in self.cluster.member_nodes()]

    def pick(self, rng):
        return rng.choice(self.nodes())

    def _spawn(self, name, fn, *args):
        t = threading.Thread(target=fn, args=args, name=name, daemon=True)
        self.threads.append(t)
        t.start()

    def _sleep(self, seconds):
        self.stop_ev.wait(seconds)

    def start(self):
        import random
        if "kv" in self.names:
            for i in range(self.kv_clients):
                self._spawn("kv%d" % i, self.kv_loop, random.Random(self.rng.random()))
        if "broker-set" in self.names:
            for i in range(self.brokers):
                self._spawn("bs%d" % i, self.broker_loop, i, random.Random(self.rng.random()))
        if "route" in self.names:
            for nd in self.cluster.nodes.values():
                self._spawn("route-n%d" % nd.id, self.route_loop, nd.id)
                self._spawn("local-n%d" % nd.id, self.local_loop, nd.id)
        if "liveness" in self.names:
            for i in range(self.liveness_brokers):
                self._spawn("lv%d" % i, self.liveness_loop, i, random.Random(self.rng.random()))
            for i in range(self.pinned_brokers):
                self._spawn("pin%d" % i, self.liveness_loop, i, random.Random(self.rng.random()),
                            True)
        if "controller" in self.names:
            import workload_controller
            self.controller = workload_controller.ControllerLoad(
                self.cluster, self.rec, random.Random(self.rng.random()), self.stop_ev,
                self.quiet_ev)
            self.controller.start(self._spawn)
        if "broker-set" in self.names:
            # seeded last, so every other thread gets the same seed as before this thread existed
            self._spawn("bs-down", self.down_loop, random.Random(self.rng.random()))

    def stop(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(30)
        self.threads = []

    def close_silent(self):
        if self.controller is not None:
            self.controller.close()
        with self.silent_lock:
            for b in self.silent:
                b.close()
            self.silent = []

    def _ryw_read(self, p, nd):
        """A plain (not consistent) read on the node that just acknowledged a write: a node
        answers a write only after applying it, so the write must be visible there."""
        p.op("read", {"consistent": False, "ryw": True}, nd.id,
             lambda: client.cluster_info(nd.client_addr))

    # -- kv ---------------------------------------------------------------------------------
    def kv_loop(self, rng):
        p = Proc(self.rec, "kv")
        n = 0
        while not self.stop_ev.is_set():
            nd = self.pick(rng)
            key = rng.choice(self.kv_keys)
            r = rng.random()
            if r < 0.45:
                n += 1
                val = "%d-%d" % (p.pid, n)
                p.op("write", {"key": key, "value": val}, nd.id,
                     lambda: client.kv_put(nd.client_addr, key, val))
            elif r < 0.9:
                p.op("read", {"key": key}, nd.id,
                     lambda: self._kv_read(nd.client_addr, key))
            else:
                p.op("delete", {"key": key}, nd.id,
                     lambda: client.kv_delete(nd.client_addr, key))
            self._sleep(rng.uniform(0.02, 0.2))

    @staticmethod
    def _kv_read(addr, key):
        res = client.kv_get(addr, key)
        if res.type == "ok":
            res.value = {"key": key, "value": res.value}
        return res

    # -- broker set -------------------------------------------------------------------------
    def broker_loop(self, idx, rng):
        p = Proc(self.rec, "broker-set")
        gen = 0
        while not self.stop_ev.is_set():
            gen += 1
            name = "bs%d-%d" % (idx, gen)
            b = client.Broker(name, "10.88.%d.%d:10911" % (idx, gen % 250),
                              timeout_ms=self.broker_timeout_ms)
            val = {"broker": name, "timeout_ms": self.broker_timeout_ms}
            nd = self.pick(rng)
            if p.op("register", val, nd.id, lambda: b.register(nd.client_addr)).type == "ok":
                self._ryw_read(p, nd)
            life = rng.uniform(5, 40)
            t_end = time.monotonic() + life
            # heartbeats: a full re-send over a random node's persistent connection each second
            while not self.stop_ev.is_set():
                if time.monotonic() >= t_end and not self.quiet_ev.is_set():
                    break
                self._sleep(1.0)
                if self.stop_ev.is_set():
                    break
                nd = self.pick(rng)
                p.op("heartbeat", val, nd.id, lambda: b.register(nd.client_addr))
                if rng.random() < 0.3:
                    nd = self.pick(rng)
                    p.op("read", {"consistent": True}, nd.id,
                         lambda: client.cluster_info(nd.client_addr, consistent=True))
            if self.stop_ev.is_set():
                self.live_brokers.append(b)
                return
            res = None
            if rng.random() < 0.7:
                nd = self.pick(rng)
                res = p.op("unregister", {"broker": name}, nd.id,
                           lambda: b.unregister(nd.client_addr))
            if res is None or res.type != "ok":
                # closing every connection lets the cluster expire it at once (fast path)
                self.rec.info("harness", "stop", {"broker": name})
            b.close()

    def down_loop(self, rng):
        """New brokers registered on the live nodes every 0.3 s while a member's process is
        down, so a restarted node has writes to catch up on while local_loop reads it; each is
        unregistered (or stopped) once no member has been down for 4 s (after the read burst)."""
        p = Proc(self.rec, "broker-set")
        pending, gen, last_down = [], 0, 0.0
        while not self.stop_ev.is_set():
            members = self.nodes()
            down = [nd for nd in members if not nd.alive()]
            live = [nd for nd in members if nd.up()]
            now = time.monotonic()
            if down:
                last_down = now
            if down and live and not self.quiet_ev.is_set():
                gen += 1
                name = "dw-%d" % gen
                b = client.Broker(name, "10.87.%d.%d:10911" % (gen // 250, gen % 250),
                                  timeout_ms=self.broker_timeout_ms)
                val = {"broker": name, "timeout_ms": self.broker_timeout_ms}
                nd = rng.choice(live)
                p.op("register", val, nd.id, lambda: b.register(nd.client_addr))
                pending.append(b)
            elif pending and now - last_down > 4.0:
                for b in pending:
                    nd = self.pick(rng)
                    res = p.op("unregister", {"broker": b.name}, nd.id,
                               lambda: b.unregister(nd.client_addr))
                    if res.type != "ok":
                        self.rec.info("harness", "stop", {"broker": b.name})
                    b.close()
                pending = []
            self._sleep(0.3)
        self.live_brokers.extend(pending)

    def heartbeat_live(self, rounds_until):
        """Keeps brokers that were alive at the end heartbeating (every node each second) until
        rounds_until() is true: used across the final reads."""
        p = Proc(self.rec, "broker-set")
        while not rounds_until():
            for b in self.live_brokers:
                val = {"broker": b.name, "timeout_ms": b.timeout_ms}
                nodes = self.nodes()
                pin = getattr(b, "pinned", None)
                if pin is not None:
                    val["pinned"] = "n%d" % pin
                    nodes = [nd for nd in nodes if nd.id == pin]
                for nd in nodes:
                    p.op("heartbeat", val, nd.id, lambda: b.register(nd.client_addr))
            time.sleep(1.0)

    # -- route reads ------------------------------------------------------------------------
    def route_loop(self, node_id):
        p = Proc(self.rec, "route")
        nd = self.cluster.nodes[node_id]
        while not self.stop_ev.is_set():
            if node_id in self.cluster.members and nd.up():
                p.op("route-read", {}, node_id, lambda: self._route_read(nd))
            self._sleep(0.25)

    def local_loop(self, node_id):
        """Plain 106 reads of one node every 0.15 s whatever its state, and every 0.02 s for the
        first 3 s of a new process or membership (a node that is not ready, as after a restart, must refuse
        them, not answer from stale state; the checker holds them to read-your-writes of that
        node)."""
        p = Proc(self.rec, "route")
        nd = self.cluster.nodes[node_id]
        seen, burst_until = None, 0.0
        while not self.stop_ev.is_set():
            proc = nd.proc
            now = (proc.pid if proc is not None else None, node_id in self.cluster.members)
            if now != seen:  # a new process, or the node (re)joined: it may not be ready
                seen, burst_until = now, time.monotonic() + 3.0
            if node_id in self.cluster.members and nd.up():
                p.op("read", {"consistent": False}, node_id,
                     lambda: client.cluster_info(nd.client_addr))
            self._sleep(0.02 if time.monotonic() < burst_until else 0.15)

    @staticmethod
    def _route_read(nd):
        try:
            st = nd.status()
        except OSError as e:
            return client.Result("fail", error=str(e))
        if not st.get("ready") or st.get("diverged"):
            return client.Result("fail", error="not ready" if not st.get("ready") else "diverged")
        res = client.cluster_info(nd.client_addr)
        if res.type != "ok":
            return res
        res.value = {"node": nd.id, "applied_index": st.get("applied_index"),
                     "digest": st.get("digest"), "digest_index": st.get("digest_index", 0),
                     "brokers": res.value}
        return res

    # -- liveness ---------------------------------------------------------------------------
    def _follower(self, idx):
        """The idx-th follower (by id, wrapping): pinned brokers spread over every follower, so
        after any leader change some of them talk to a node that is still a follower."""
        lead = self.cluster.leader()
        nodes = [nd for nd in self.nodes() if nd.id != lead] or self.nodes()
        return nodes[idx % len(nodes)]

    def liveness_loop(self, idx, rng, pinned=False):
        """A broker heartbeating every node each second (as a broker configured with every
        name-server address does) or, pinned, only one follower picked at its birth (a stock
        broker configured with one address: only that node's liveness reports keep it)."""
        p = Proc(self.rec, "liveness")
        gen = 0
        while not self.stop_ev.is_set():
            gen += 1
            name = ("pin%d-%d" if pinned else "lv%d-%d") % (idx, gen)
            tmo = self.liveness_timeout_ms
            b = client.Broker(name, "10.%d.%d.%d:10911" % (90 if pinned else 89, idx, gen % 250),
                              timeout_ms=tmo)
            val = {"broker": name, "timeout_ms": tmo}
            targets = None
            if pinned:
                nd0 = self._follower(idx + gen)
                val["pinned"] = "n%d" % nd0.id
                b.pinned = nd0.id
                targets = [nd0]
            life = time.monotonic() + rng.uniform(10, 40)
            first = True
            while not self.stop_ev.is_set() and (time.monotonic() < life
                                                 or self.quiet_ev.is_set()):
                for nd in targets or self.nodes():
                    res = p.op("register" if first else "heartbeat", val, nd.id,
                               lambda: b.register(nd.client_addr))
                    if first and pinned and res.type == "ok":
                        self._ryw_read(p, nd)
                first = False
                nd = self.pick(rng)
                p.op("read", {"consistent": True}, nd.id,
                     lambda: client.cluster_info(nd.client_addr, consistent=True))
                self._sleep(1.0)
            if self.stop_ev.is_set():
                self.live_brokers.append(b)
                return
            # stop: half go silent with connections open, half close their connections
            mode = "silent" if rng.random() < 0.5 else "close"
            self.rec.event({"process": "harness", "type": "info", "f": "stop-heartbeat",
                            "value": {"broker": name, "mode": mode}, "workload": "liveness"})
            if mode == "close":
                b.close()
                self._sleep(1.0)
            else:
                # connections stay open until the run ends: only the timeout removes it
                with self.silent_lock:
                    self.silent.append(b)
                self._sleep(1.0)
