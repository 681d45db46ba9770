#!/usr/bin/env python3
"""Fault-suite checker: reads history.jsonl, runs every check of README.md, writes results.json.

It judges a recorded history only; it never talks to raftns (the harness does) and draws nothing
(plot.py does).
"""

import argparse
import bisect
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checker_controller  # noqa: E402
import checker_kv  # noqa: E402
from history import INF, config, harness_events, pair_ops, read_history  # noqa: E402

MS = 1_000_000
MAX_ERRORS = 10
REG_FS = ("register", "heartbeat")
READ_FS = ("read", "final-read")
STOP_FS = ("stop", "stop-heartbeat")


def result(valid, counts, errors):
    return {"valid": valid, "counts": counts, "errors": errors[:MAX_ERRORS]}


def broker_of(op):
    v = op.value
    if isinstance(v, dict):
        return v.get("broker")
    return None


def read_set(op):
    """Broker names of an ok read, or None when the result is not a list."""
    r = op.result
    if isinstance(r, dict):
        r = r.get("brokers")
    if isinstance(r, list):
        return set(str(b) for b in r)
    return None


def is_consistent(op):
    return isinstance(op.value, dict) and bool(op.value.get("consistent"))


def is_authoritative(op):
    if op.f == "final-read" or is_consistent(op):
        return True
    return isinstance(op.result, dict) and bool(op.result.get("majority"))


def is_global(op):
    return op.f == "final-read" or is_consistent(op)


def digest_mark(d):
    """(index, digest) a node's state digest is for, or None when it has none yet. raftns
    reports the digest of its last checkpoint with `digest_index` (0 = none yet); without that
    field the digest is taken to be of `applied_index`."""
    if not isinstance(d, dict) or d.get("digest") in (None, ""):
        return None
    dig = d["digest"]
    if "digest_index" in d:
        if not d["digest_index"]:
            return None
        return (d["digest_index"], dig)
    if isinstance(dig, str) and dig.strip("0") == "":
        return None
    return (d.get("applied_index"), dig)


def scale(cfg):
    """The harness's deadline scale (RAFTNS_TEST_SCALE, x3 for sanitizer builds): every timing
    allowance of the checker is a configured timeout times this, never a fixed guess."""
    s = cfg.get("scale", 1)
    return s if isinstance(s, (int, float)) and s > 0 else 1


def slack_ns(cfg):
    return cfg.get("expiry_slack_ms", 2000) * MS * scale(cfg)


# src/liveness/liveness.c REPORT_TIMEOUT_MS (3 s) + the 1 s liveness tick + peer.c's 1 s connect
# timeout: the worst case for a follower's report to reach the leader after a fault ends.
REPORT_RECOVERY_MS = 5000
WINDOW_OPEN = {"kill": "restart", "pause": "resume", "start-partition": "stop-partition",
               "remove-node": "add-node"}


def fault_windows(events, cfg):
    """[(start, end)] of every fault: kill..restart, pause..resume, partitions, membership
    cycles, and a node's unexpected exit until it is started again; a window still open at the
    heal closes there, one still open at the end never closes. Each end is pushed out by two
    election timeouts plus `report_recovery_ms` (scaled): the time a restarted or reconnected
    node needs before the leader hears what it heard (a report lost in the fault is resent only
    after its timeout, then waits for the next tick and a new connection)."""
    margin = (2 * cfg.get("election_timeout_ms", 1000) +
              cfg.get("report_recovery_ms", REPORT_RECOVERY_MS)) * MS * scale(cfg)
    opened = {}
    out = []
    closers = {v: k for k, v in WINDOW_OPEN.items()}
    for ev in events:
        f, v = ev.get("f"), ev.get("value") if isinstance(ev.get("value"), dict) else {}
        proc = ev.get("process")
        if proc == "nemesis" and f in WINDOW_OPEN:
            key = (f, v.get("node") if f != "start-partition" else None)
            opened.setdefault(key, ev["time"])
        elif proc == "nemesis" and f in closers:
            key = (closers[f], v.get("node") if f != "stop-partition" else None)
            if key in opened:
                out.append((opened.pop(key), ev["time"] + margin))
        elif proc == "harness" and f == "exit" and not v.get("expected") and \
                v.get("cause") != "cleanup":
            opened.setdefault(("exit", v.get("node")), ev["time"])
        elif proc == "harness" and f == "node-start":
            if ("exit", v.get("node")) in opened:
                out.append((opened.pop(("exit", v.get("node"))), ev["time"] + margin))
        elif proc == "harness" and f == "heal":
            for key in list(opened):
                out.append((opened.pop(key), ev["time"] + margin))
    out += [(t, INF) for t in opened.values()]
    return sorted(out)


def in_windows(t, windows):
    return any(a <= t <= b for a, b in windows)


def node_starts(events):
    """{node: sorted times its processes were spawned} from the harness's node-start events
    (`spawn_time`, taken before the process existed; the event's own time in older histories)."""
    out = {}
    for ev in harness_events(events, "node-start"):
        v = ev.get("value") if isinstance(ev.get("value"), dict) else {}
        if v.get("node") is None:
            continue
        t = v.get("spawn_time")
        out.setdefault(str(v["node"]), []).append(t if isinstance(t, (int, float)) else ev["time"])
    return {n: sorted(ts) for n, ts in out.items()}


def started_before(starts, node, t):
    """When node's process that was running at t was spawned: its latest start before t."""
    ts = starts.get(str(node)) or []
    i = bisect.bisect_left(ts, t)
    return ts[i - 1] if i else None


class Brokers:
    """Per broker: its register/heartbeat ops, unregisters and stop times across all workloads."""

    def __init__(self, ops, events, cfg):
        self.regs = {}
        self.unregs = {}
        self.stops = {}
        self.timeout_ms = {}
        self.pinned = set()  # brokers that talk to one node only (value "pinned")
        default_to = cfg.get("broker_timeout_ms", 120000)
        for op in ops:
            b = broker_of(op)
            if b is None:
                continue
            b = str(b)
            if op.f in REG_FS:
                self.regs.setdefault(b, []).append(op)
                if op.value.get("pinned"):
                    self.pinned.add(b)
                to = op.value.get("timeout_ms")
                self.timeout_ms[b] = to if isinstance(to, (int, float)) else \
                    self.timeout_ms.get(b, default_to)
            elif op.f == "unregister":
                self.unregs.setdefault(b, []).append(op)
            elif op.f in STOP_FS:
                self.stops.setdefault(b, []).append(op.start)
        for ev in events:
            if ev.get("f") in STOP_FS and not isinstance(ev.get("process"), int):
                v = ev.get("value")
                if isinstance(v, dict) and v.get("broker") is not None:
                    self.stops.setdefault(str(v["broker"]), []).append(ev["time"])
        for b in self.regs:
            self.timeout_ms.setdefault(b, default_to)
        self.windows = fault_windows(events, cfg)
        self.starts = node_starts(events)
        self._last_drops = {}

    def heard(self, b):
        """b's ok register/heartbeat ops the leader surely heard of: all of them, except for a
        pinned broker those invoked inside a fault window (its one node may have been cut off
        from the leader, answering heartbeats from local state that no report carried on)."""
        oks = [r for r in self.regs.get(b, []) if r.type == "ok"]
        if b not in self.pinned:
            return oks
        return [r for r in oks if not in_windows(r.start, self.windows)]

    def drop_excuses(self, b, start, end):
        """True when, within one timeout before [start, end], every connection b had registered
        over was dropped: the client closes a connection on which an op ended in a transport
        error (client.call), and the leader expires a broker at once when every connection that
        registered it closed (docs/design.md §5, fast path). A pinned broker has one such
        connection; a broker-set broker one per node it registered over since."""
        to = self.timeout_ns(b)
        return any(r.start < end and r.end + to > start for r in self.last_drops(b))

    def last_drops(self, b):
        """b's ops whose transport error left none of its registering connections open, in the
        order the broker's one process ran them."""
        if b not in self._last_drops:
            ops = sorted(self.regs.get(b, []) + self.unregs.get(b, []), key=lambda r: r.start)
            registered, drops = set(), []
            for r in ops:
                if r.error == "connect failed":
                    continue  # nothing was sent: no connection
                carried = r.f in REG_FS or r.node in registered
                if r.f in REG_FS:
                    registered.add(r.node)
                if r.type != "ok" and not str(r.error or "").startswith("code"):
                    registered.discard(r.node)
                    if carried and not registered:
                        drops.append(r)
            self._last_drops[b] = drops
        return self._last_drops[b]

    def timeout_ns(self, b):
        return self.timeout_ms.get(b, 120000) * MS

    def removal_invoked_before(self, b, t):
        # Even a failed unregister counts: the broker then closes its connections, and a broker
        # whose connections all closed may be expired at once (docs/design.md §5 fast path).
        if any(u.start < t for u in self.unregs.get(b, [])):
            return True
        return any(s < t for s in self.stops.get(b, []))

    def explaining_register(self, b, witness_start, read_end):
        """A non-failed register of b invoked before read_end that had not completed before
        witness_start: it may have been applied after the witness."""
        for r in self.regs.get(b, []):
            if r.type == "fail":
                continue
            if r.start < read_end and not (r.end < witness_start):
                return r
        return None


# ---------------------------------------------------------------- 1. broker-set


def check_broker_set(ops, events, cfg):
    bs = Brokers(ops, events, cfg)
    wops = [op for op in ops if op.workload == "broker-set"]
    reads = [op for op in wops if op.f in READ_FS and op.type == "ok" and read_set(op) is not None]
    finals = [op for op in reads if op.f == "final-read"]
    counts = {"ops": len(wops), "reads": len(reads), "final_reads": len(finals),
              "brokers": len(set(broker_of(op) for op in wops if broker_of(op) is not None)),
              "lost": 0, "resurrected": 0, "final_mismatch": 0, "checked": 0}
    errors = []
    names = set(str(broker_of(op)) for op in wops if broker_of(op) is not None)

    lost = find_lost(ops, bs)
    counts["checked"] += lost["checked"]
    counts["lost"] = lost["lost"]
    counts["lost_ryw"] = lost["ryw"]
    counts["lost_after_restart"] = lost["stale"]
    counts["reads_searched"] = lost["reads"]
    errors += lost["errors"]

    # Resurrected: present after a witness of absence with no register to explain it.
    witnesses = {}
    for b in names:
        w = []
        for u in bs.unregs.get(b, []):
            if u.type == "ok":
                w.append(("unregister", u))
        witnesses[b] = w
    for rd in reads:
        if is_global(rd):
            for b in names:
                if b not in read_set(rd):
                    witnesses[b].append(("absent-read", rd))
    for rd in reads:
        seen = read_set(rd)
        for b in sorted(seen & names):
            for kind, w in witnesses[b]:
                if not (w.end < rd.start):
                    continue
                if kind == "unregister":
                    if not (is_global(rd) or rd.node == w.node):
                        continue
                elif not is_global(rd):
                    continue
                counts["checked"] += 1
                if bs.explaining_register(b, w.start, rd.end) is None:
                    counts["resurrected"] += 1
                    errors.append({"kind": "resurrected", "broker": b, "read": rd.brief(),
                                   "witness": w.brief()})
                    break

    # Final reads identical across nodes, over this workload's brokers that cannot be
    # mid-expiry while the final reads run (a stopped broker before its deadline may be).
    if finals:
        t_first = min(fr.start for fr in finals)
        flux = set()
        for b in names:
            if bs.stops.get(b):
                regs = bs.regs.get(b, [])
                heard = [r.end if r.end != INF else r.start for r in regs] + bs.stops[b]
                if expiry_deadline(bs, b, max(heard), events, cfg) >= t_first:
                    flux.add(b)
        counts["final_in_flux"] = len(flux)
        stable = names - flux
        first = read_set(finals[0]) & stable
        for fr in finals[1:]:
            if read_set(fr) & stable != first:
                counts["final_mismatch"] += 1
                errors.append({"kind": "final-mismatch", "node_a": finals[0].node,
                               "node_b": fr.node,
                               "only_a": sorted(first - read_set(fr)),
                               "only_b": sorted((read_set(fr) & stable) - first)})
    valid = counts["lost"] == 0 and counts["resurrected"] == 0 and counts["final_mismatch"] == 0
    return result(valid, counts, errors)


class _Acks:
    """ok register/heartbeat ops of one broker sorted by completion, with the running maximum
    of the invoke times of the "heard" ones: answers, for a read that began at t, whether some
    ack completed before t and the latest invoke of a heard ack completed before t."""

    def __init__(self, acks, heard):
        heard_ids = set(id(r) for r in heard)
        acks = sorted(acks, key=lambda r: r.end)
        self.ends = [r.end for r in acks]
        self.ops = acks
        self.best = []
        m = None
        for r in acks:
            if id(r) in heard_ids and (m is None or r.start > m):
                m = r.start
            self.best.append(m)

    def before(self, t):
        """(latest ack completed before t, latest heard invoke among them) or (None, None)."""
        i = bisect.bisect_left(self.ends, t)
        if i == 0:
            return None, None
        return self.ops[i - 1], self.best[i - 1]


def find_lost(ops, bs):
    """Lost acknowledged registrations, searched for in every read that must show them:
    - every consistent or final read (any workload) must contain a broker with an ok
      register/heartbeat completed before it began, unless its removal (unregister of any
      outcome, stop) was invoked before the read completed or its timeout may have run out since
      the latest invoke of an op the leader surely heard (Brokers.heard), or every connection
      it registered over dropped within one timeout before the read (Brokers.drop_excuses);
    - every plain read on node N must contain a broker that N acknowledged before the read
      began, under the same exceptions (read-your-writes: a node answers a write only after
      applying it; a node that is not ready forwards the read to the leader, whose state has it);
    - every plain read that N answered itself (no `served_by`: not forwarded) must contain a
      broker acknowledged by any node before N's process was spawned, under the same
      exceptions: a node answers reads itself only once ready, i.e. after applying the read
      index it asked the leader for after it started (a quorum barrier, raft/node/node_read.c,
      docs/readiness.md), which covers every write committed before that start. A forwarded
      read is held to read-your-writes only: it was answered by the leader the asked node
      follows, which may be a deposed leader that has not stepped down yet."""
    reads = [op for op in ops if op.f in READ_FS and op.type == "ok" and read_set(op) is not None]
    out = {"checked": 0, "lost": 0, "ryw": 0, "reads": len(reads), "errors": []}
    table = {}
    for b, regs in bs.regs.items():
        oks = [r for r in regs if r.type == "ok"]
        if not oks:
            continue
        heard = bs.heard(b)
        by_node = {}
        for r in oks:
            by_node.setdefault(r.node, []).append(r)
        table[b] = (_Acks(oks, heard), {n: _Acks(rs, heard) for n, rs in by_node.items()},
                    min(r.end for r in oks))
    removal = {b: min([u.start for u in bs.unregs.get(b, [])] + bs.stops.get(b, []) + [INF])
               for b in table}
    out["stale"] = 0
    for rd in reads:
        seen = read_set(rd)
        auth = is_global(rd)
        t_start = None
        if not auth and rd.served_by is None:
            t_start = started_before(bs.starts, rd.node, rd.start)
        for b, (acks, by_node, first_end) in table.items():
            if first_end >= rd.start or removal[b] < rd.end:
                continue
            kind = "lost" if auth else "lost-ryw"
            src = acks if auth else by_node.get(rd.node)
            ack = src.before(rd.start)[0] if src is not None else None
            if ack is None and t_start is not None and first_end < t_start:
                ack, kind = acks.before(t_start)[0], "lost-after-restart"
            if ack is None:
                continue
            _, last_heard = acks.before(rd.start)
            if last_heard is None or rd.end >= last_heard + bs.timeout_ns(b):
                continue
            if bs.drop_excuses(b, rd.start, rd.end):
                continue
            out["checked"] += 1
            if b not in seen:
                out["lost"] += 1
                if kind == "lost-ryw":
                    out["ryw"] += 1
                elif kind == "lost-after-restart":
                    out["stale"] += 1
                err = {"kind": kind, "broker": b, "read": rd.brief(), "acknowledged": ack.brief()}
                if kind == "lost-after-restart":
                    err["node_spawned"] = t_start
                out["errors"].append(err)
    return out


# ---------------------------------------------------------------- 3. route reads


def check_route_reads(ops, events, cfg):
    bs = Brokers(ops, events, cfg)
    rreads = [op for op in ops if op.workload == "route" and op.f == "route-read"
              and op.type == "ok" and isinstance(op.result, dict)]
    counts = {"reads": len(rreads), "nodes": 0, "went_back": 0, "digest_conflicts": 0,
              "phantoms": 0, "checked": 0}
    errors = []
    by_node = {}
    for rd in rreads:
        node = rd.result.get("node", rd.node)
        by_node.setdefault(str(node), []).append(rd)
    counts["nodes"] = len(by_node)
    for node, rs in sorted(by_node.items()):
        # Highest index among reads completed before each read began (sweep by time).
        done = sorted(rs, key=lambda r: r.end)
        best = None
        j = 0
        for rd in sorted(rs, key=lambda r: r.start):
            while j < len(done) and done[j].end < rd.start:
                c = done[j]
                if best is None or c.result.get("applied_index", -1) > \
                        best.result.get("applied_index", -1):
                    best = c
                j += 1
            counts["checked"] += 1
            if best is not None and rd.result.get("applied_index", -1) < \
                    best.result.get("applied_index", -1):
                counts["went_back"] += 1
                errors.append({"kind": "went-back", "node": node, "earlier": best.brief(),
                               "later": rd.brief()})
    digest_at = {}
    for rd in rreads:
        mark = digest_mark(rd.result)
        if mark is None:
            continue
        prev = digest_at.setdefault(mark[0], (mark[1], rd))
        if prev[0] != mark[1]:
            counts["digest_conflicts"] += 1
            errors.append({"kind": "digest-conflict", "index": mark[0],
                           "a": prev[1].brief(), "b": rd.brief()})
    # Phantoms: shown anywhere while every register attempt failed (or none was made).
    shown = {}
    for op in ops:
        if op.type != "ok":
            continue
        if op.workload == "route" and op.f == "route-read" and isinstance(op.result, dict):
            names = op.result.get("brokers") or []
        elif op.f in READ_FS and read_set(op) is not None:
            names = read_set(op)
        else:
            continue
        for b in names:
            shown.setdefault(str(b), op)
    for b, op in sorted(shown.items()):
        attempts = bs.regs.get(b, [])
        if not any(r.type != "fail" for r in attempts):
            counts["phantoms"] += 1
            errors.append({"kind": "phantom", "broker": b, "attempts": len(attempts),
                           "read": op.brief()})
    valid = counts["went_back"] == 0 and counts["digest_conflicts"] == 0 and \
        counts["phantoms"] == 0
    return result(valid, counts, errors)


# ---------------------------------------------------------------- 4. liveness


def expiry_deadline(bs, b, last_heard, events, cfg):
    """Latest time by which stopped broker b must be gone everywhere (see README check 4)."""
    timeout = bs.timeout_ns(b)
    scan = cfg.get("scan_interval_ms", 5000) * MS
    slack = slack_ns(cfg)
    grant = timeout + scan + slack
    deadline = last_heard + grant
    # Only a leader change moves the deadline: the new leader grants every broker a full
    # timeout from its takeover (docs/design.md §5), and the harness observes a takeover after
    # it happened, so "observed + grant" is a bound. Each leader change inside the window grants
    # anew (that is the design, not slack). A deadline that falls while the cluster has no
    # leader (its leader killed or paused, no successor observed yet) cannot be met by anyone:
    # it moves to the successor's takeover. Nothing else moves it.
    changes = leader_changes(events)
    while True:
        moved = deadline
        for t in changes:
            if last_heard <= t <= moved:
                moved = max(moved, t + grant)
        successor = successor_of_lost_leader(events, moved)
        if successor is not None:
            moved = max(moved, successor + grant)
        if moved == deadline:
            return deadline
        deadline = moved


def leader_changes(events):
    return sorted(ev["time"] for ev in events
                  if ev.get("process") == "harness" and ev.get("f") == "leader")


def successor_of_lost_leader(events, t):
    """When the last leader observed before t was killed or paused after that observation and
    no other leader was observed by t: the time the next leader is observed (or None)."""
    leader, lost = None, False
    for ev in sorted(events, key=lambda e: e["time"]):
        node = (ev.get("value") or {}).get("node") if isinstance(ev.get("value"), dict) else None
        if ev.get("process") == "harness" and ev.get("f") == "leader":
            if ev["time"] > t:
                return ev["time"] if lost else None
            leader, lost = node, False
        elif ev["time"] <= t and ev.get("process") == "nemesis" and \
                ev.get("f") in ("kill", "pause") and leader is not None and node == leader:
            lost = True
    return None


def chain_start(times, end, limit):
    """Start of the heartbeat chain (gaps < limit) that reaches `end`, or None if broken at end."""
    before = [t for t in times if t <= end]
    if not before or end - before[-1] >= limit:
        return None
    s = before[-1]
    for t in reversed(before[:-1]):
        if s - t >= limit:
            break
        s = t
    return s


def check_liveness(ops, events, cfg):
    bs = Brokers(ops, events, cfg)
    lops = [op for op in ops if op.workload == "liveness"]
    reads = [op for op in ops if op.workload in ("liveness", "broker-set") and op.f in READ_FS
             and op.type == "ok" and read_set(op) is not None]
    auth = [op for op in reads if is_authoritative(op)]
    slack = slack_ns(cfg)
    names = sorted(set(str(broker_of(op)) for op in lops if broker_of(op) is not None))
    counts = {"brokers": len(names), "reads": len(reads), "authoritative_reads": len(auth),
              "expired_while_alive": 0, "not_gone": 0, "checked": 0}
    errors = []
    counts["pinned"] = len([b for b in names if b in bs.pinned])
    for b in names:
        ok_ops = bs.heard(b)
        oks = sorted(r.start for r in ok_ops)
        limit = bs.timeout_ns(b) - slack
        for rd in auth:
            if bs.removal_invoked_before(b, rd.end):
                continue
            s = chain_start(oks, rd.end, limit)
            if s is None:
                continue
            if not any(r.start >= s and r.end < rd.start for r in ok_ops):
                continue
            if bs.drop_excuses(b, s, rd.end):
                continue
            counts["checked"] += 1
            if b not in read_set(rd):
                counts["expired_while_alive"] += 1
                errors.append({"kind": "expired-while-alive", "broker": b, "read": rd.brief(),
                               "chain_start": s})
        stops = bs.stops.get(b, [])
        if not stops:
            continue
        t_stop = max(stops)
        regs = bs.regs.get(b, [])
        if any(r.start > t_stop for r in regs):
            continue  # restarted after the stop
        ends = [r.end if r.end != INF else r.start for r in regs]
        ends += [r.start for r in regs]
        last_heard = max(ends + [t_stop]) if regs else t_stop
        deadline = expiry_deadline(bs, b, last_heard, events, cfg)
        for rd in auth:
            if rd.start <= deadline:
                continue
            counts["checked"] += 1
            if b in read_set(rd):
                counts["not_gone"] += 1
                errors.append({"kind": "not-gone", "broker": b, "read": rd.brief(),
                               "deadline": deadline, "last_heard": last_heard})
    valid = counts["expired_while_alive"] == 0 and counts["not_gone"] == 0
    return result(valid, counts, errors)


# ---------------------------------------------------------------- 5. convergence


def check_convergence(ops, events, cfg):
    conv = harness_events(events, "convergence")
    scans = harness_events(events, "log-scan")
    counts = {"samples": 0, "nodes": 0, "converged_after_ms": None, "diverged": 0,
              "log_problems": 0, "checked": 0}
    errors = []
    if not conv:
        errors.append({"kind": "missing", "what": "convergence event"})
    if not scans:
        errors.append({"kind": "missing", "what": "log-scan event"})
    want_nodes = set(str(n) for n in cfg.get("nodes", []))
    converged = False
    for ev in conv:
        v = ev.get("value") or {}
        healed = v.get("healed_time", ev["time"])
        samples = v.get("samples") or []
        counts["samples"] += len(samples)
        for s in samples:
            nodes = {str(k): n for k, n in (s.get("nodes") or {}).items()}
            counts["nodes"] = max(counts["nodes"], len(nodes))
            counts["checked"] += 1
            by_idx = {}
            for name, n in sorted(nodes.items()):
                if isinstance(n, dict) and n.get("diverged"):
                    counts["diverged"] += 1
                    errors.append({"kind": "diverged", "node": name, "flag": True,
                                   "time": s.get("time")})
                mark = digest_mark(n)
                if mark is None:
                    continue
                prev = by_idx.setdefault(mark[0], (name, mark[1]))
                if prev[1] != mark[1]:
                    counts["diverged"] += 1
                    errors.append({"kind": "diverged", "index": mark[0], "node_a": prev[0],
                                   "node_b": name, "time": s.get("time")})
            need = want_nodes or set(nodes)
            if not need <= set(nodes) or not nodes:
                continue
            vals = set()
            for name in need:
                n = nodes[name] if isinstance(nodes[name], dict) else {}
                vals.add((n.get("applied_index"), n.get("table_hash")))
            if len(vals) == 1 and None not in next(iter(vals)) and \
                    s.get("time", INF) - healed <= 10_000 * MS * scale(cfg) and not converged:
                converged = True
                counts["converged_after_ms"] = max(0, (s["time"] - healed) // MS)
    if conv and not converged:
        errors.append({"kind": "not-converged", "within_ms": 10000 * scale(cfg),
                       "last_sample": (conv[-1].get("value") or {}).get("samples", [None])[-1]})
    for ev in scans:
        probs = (ev.get("value") or {}).get("problems") or []
        counts["log_problems"] += len(probs)
        for p in probs[:MAX_ERRORS]:
            errors.append({"kind": "log", "problem": p})
    valid = bool(conv) and bool(scans) and converged and counts["diverged"] == 0 and \
        counts["log_problems"] == 0
    return result(valid, counts, errors)


# ---------------------------------------------------------------- 6. final tables


def check_final_tables(ops, events, cfg):
    """The final-tables event: every member answered every table (105 of every topic, 106, 206,
    224, 219, 101 of every kv key, the member list) in one round where all reported the same
    applied index before and after, and every table is byte-identical on every node."""
    evs = harness_events(events, "final-tables")
    counts = {"nodes": 0, "tables": 0, "mismatched": 0, "checked": 0}
    errors = []
    if not evs:
        return result(False, counts, [{"kind": "missing", "what": "final-tables event"}])
    v = evs[-1].get("value") or {}
    nodes = v.get("nodes") or {}
    counts["nodes"] = len(nodes)
    want = set(str(n) for n in cfg.get("nodes", []))
    absent = sorted(n for n in set(nodes) | want if not isinstance(nodes.get(n), dict))
    if absent:
        errors.append({"kind": "no-answer", "nodes": absent})
    if not v.get("stable"):
        errors.append({"kind": "not-stable", "applied_index": v.get("applied_index")})
    answered = {n: t for n, t in nodes.items() if isinstance(t, dict)}
    names = sorted(set(k for t in answered.values() for k in t))
    counts["tables"] = len(names)
    for name in names:
        vals = {n: t.get(name) for n, t in sorted(answered.items())}
        counts["checked"] += len(vals)
        if len(set(vals.values())) != 1:
            counts["mismatched"] += 1
            errors.append({"kind": "table-mismatch", "table": name, "nodes": vals})
    valid = not errors and counts["checked"] > 0
    return result(valid, counts, errors)


# ---------------------------------------------------------------- 7. node exits and nemesis


def check_nodes(ops, events, cfg):
    """Every node process's exit was caused by the harness (a nemesis kill: -9; a stop: 0), every
    started process has a recorded exit, and every nemesis step was carried out (or its failure
    was declared expected)."""
    counts = {"starts": 0, "exits": 0, "unexpected_exits": 0, "no_exit": 0,
              "nemesis_failed": 0, "nemesis_failed_expected": 0, "checked": 0}
    errors = []
    running = {}
    for ev in harness_events(events):
        f, v = ev.get("f"), ev.get("value") if isinstance(ev.get("value"), dict) else {}
        if f == "node-start":
            counts["starts"] += 1
            running[v.get("pid")] = v.get("node")
        elif f == "exit":
            counts["exits"] += 1
            counts["checked"] += 1
            running.pop(v.get("pid"), None)
            if not v.get("expected") and v.get("cause") != "cleanup":
                counts["unexpected_exits"] += 1
                errors.append({"kind": "unexpected-exit", "node": v.get("node"),
                               "rc": v.get("rc"), "cause": v.get("cause"), "time": ev["time"]})
        elif f == "nemesis-failed":
            counts["checked"] += 1
            if v.get("expected"):
                counts["nemesis_failed_expected"] += 1
            else:
                counts["nemesis_failed"] += 1
                errors.append({"kind": "nemesis-failed", "fault": v})
    for pid, node in sorted(running.items(), key=str):
        counts["no_exit"] += 1
        errors.append({"kind": "no-exit-recorded", "node": node, "pid": pid})
    valid = counts["unexpected_exits"] == 0 and counts["nemesis_failed"] == 0 and \
        counts["no_exit"] == 0
    return result(valid, counts, errors)


# ---------------------------------------------------------------- driver


def check_format(problems):
    return result(not problems, {"problems": len(problems)}, [{"problem": p} for p in problems])


# The workloads whose operations a check judges (a check not listed judges every run).
WORKLOAD_CHECKS = {"broker-set": ("broker-set", "liveness"), "kv-linearizable": ("kv",),
                   "route-reads": ("route",), "liveness": ("liveness",)}


def check_events(events, max_steps=checker_kv.DEFAULT_MAX_STEPS, want=None):
    """Runs every check on parsed events; returns the results.json dict."""
    ops, problems = pair_ops(events)
    cfg = config(events)
    checks = {
        "format": lambda: check_format(problems),
        "broker-set": lambda: check_broker_set(ops, events, cfg),
        "kv-linearizable": lambda: checker_kv.check(ops, max_steps=max_steps),
        "route-reads": lambda: check_route_reads(ops, events, cfg),
        "liveness": lambda: check_liveness(ops, events, cfg),
        "convergence": lambda: check_convergence(ops, events, cfg),
        "final-tables": lambda: check_final_tables(ops, events, cfg),
        "nodes": lambda: check_nodes(ops, events, cfg),
    }
    declared = cfg.get("workloads")
    if isinstance(declared, list):
        # a run that declares its workloads is not judged on checks of workloads it did not
        # run (a declared one that recorded nothing is still "unknown")
        for name, needs in WORKLOAD_CHECKS.items():
            if not set(needs) & set(declared):
                checks.pop(name, None)
        if "controller" in declared:
            checks.update(checker_controller.checks(ops, events, cfg,
                                                    lambda: fault_windows(events, cfg)))
    out = {}
    for name, fn in checks.items():
        if want is None or name in want:
            r = fn()
            # A check that had nothing to check proves nothing: never VALID.
            if r["valid"] is True and name != "format" and not r["counts"].get("checked"):
                r["valid"] = "unknown"
                r["errors"] = [{"kind": "nothing-checked"}] + r["errors"]
            out[name] = r
    verdicts = [r["valid"] for r in out.values()]
    valid = False if False in verdicts else ("unknown" if "unknown" in verdicts else True)
    hist = {"events": len(events), "ops": len(ops),
            "ok": sum(1 for o in ops if o.type == "ok"),
            "fail": sum(1 for o in ops if o.type == "fail"),
            "info": sum(1 for o in ops if o.type == "info"),
            "nemesis": sum(1 for e in events if e.get("process") == "nemesis")}
    return {"valid": valid, "checks": out, "history": hist}


def summary(res):
    lines = []
    h = res["history"]
    lines.append("history: %d events, %d ops (%d ok, %d fail, %d info), %d nemesis events" % (
        h["events"], h["ops"], h["ok"], h["fail"], h["info"], h["nemesis"]))
    for name, r in res["checks"].items():
        v = r["valid"]
        tag = "PASS" if v is True else ("UNKNOWN" if v == "unknown" else "FAIL")
        cs = " ".join("%s=%s" % (k, r["counts"][k]) for k in r["counts"])
        lines.append("%-16s %-7s %s" % (name, tag, cs))
        if v is not True:
            for e in r["errors"][:3]:
                lines.append("    " + json.dumps(e, sort_keys=True, default=str)[:400])
    v = res["valid"]
    lines.append("VALID" if v is True else ("UNKNOWN" if v == "unknown" else "INVALID"))
    return "\n".join(lines)


def exit_code(res):
    v = res["valid"]
    return 0 if v is True else (2 if v == "unknown" else 1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("history")
    ap.add_argument("--out", help="results.json path (default: next to the history)")
    ap.add_argument("--plot", help="also draw a PNG timeline to this path")
    ap.add_argument("--max-steps", type=int, default=checker_kv.DEFAULT_MAX_STEPS)
    ap.add_argument("--only", action="append", help="run only this check (repeatable)")
    args = ap.parse_args(argv)
    events = read_history(args.history)
    res = check_events(events, max_steps=args.max_steps, want=args.only)
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.history)), "results.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1, sort_keys=True, default=str)
        f.write("\n")
    print(summary(res))
    if args.plot:
        import plot
        plot.plot(events, args.plot)
    return exit_code(res)


if __name__ == "__main__":
    sys.exit(main())
