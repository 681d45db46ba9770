#!/usr/bin/env python3
"""Fault-suite checker: reads history.jsonl, runs every check of README.md, writes results.json.

It judges a recorded history only; it never talks to raftns (the harness does) and draws nothing
(plot.py does).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

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


class Brokers:
    """Per broker: its register/heartbeat ops, unregisters and stop times across all workloads."""

    def __init__(self, ops, events, cfg):
        self.regs = {}
        self.unregs = {}
        self.stops = {}
        self.timeout_ms = {}
        default_to = cfg.get("broker_timeout_ms", 120000)
        for op in ops:
            b = broker_of(op)
            if b is None:
                continue
            b = str(b)
            if op.f in REG_FS:
                self.regs.setdefault(b, []).append(op)
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

    def timeout_ns(self, b):
        return self.timeout_ms.get(b, 120000) * MS

    def removal_invoked_before(self, b, t):
        # Even a failed unregister counts: the broker then closes its connections, and a broker
        # whose connections all closed may be expired at once (DESIGN.md section 5 fast path).
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

    # Lost: acknowledged and not removable must be in every final read.
    for fr in finals:
        seen = read_set(fr)
        for b in sorted(names):
            oks = [r for r in bs.regs.get(b, []) if r.type == "ok" and r.end < fr.start]
            if not oks:
                continue
            if bs.removal_invoked_before(b, fr.end):
                continue
            last_ok_start = max(r.start for r in oks)
            if fr.end >= last_ok_start + bs.timeout_ns(b):
                continue
            counts["checked"] += 1
            if b not in seen:
                counts["lost"] += 1
                errors.append({"kind": "lost", "broker": b, "final_read": fr.brief(),
                               "acknowledged": max(oks, key=lambda r: r.end).brief()})

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
    slack = cfg.get("expiry_slack_ms", 2000) * MS
    # A leader that dies is replaced after a randomised election timeout in
    # [T, 2T] (canonical/raft) plus a vote round, and the new leader grants
    # every broker a full timeout from its takeover (DESIGN.md §5).
    elect = 2 * cfg.get("election_timeout_ms", 1000) * MS
    deadline = last_heard + timeout + scan + slack
    moves = sorted(ev["time"] for ev in events
                   if ev.get("process") == "nemesis"
                   or (ev.get("process") == "harness" and ev.get("f") in ("leader", "heal")))
    for t in moves:
        if last_heard <= t <= deadline:
            deadline = max(deadline, t + elect + timeout + scan + slack)
    return deadline


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
    slack = cfg.get("expiry_slack_ms", 2000) * MS
    names = sorted(set(str(broker_of(op)) for op in lops if broker_of(op) is not None))
    counts = {"brokers": len(names), "reads": len(reads), "authoritative_reads": len(auth),
              "expired_while_alive": 0, "not_gone": 0, "checked": 0}
    errors = []
    for b in names:
        oks = sorted(r.start for r in bs.regs.get(b, []) if r.type == "ok")
        ok_ops = [r for r in bs.regs.get(b, []) if r.type == "ok"]
        limit = bs.timeout_ns(b) - slack
        for rd in auth:
            if bs.removal_invoked_before(b, rd.end):
                continue
            s = chain_start(oks, rd.end, limit)
            if s is None:
                continue
            if not any(r.start >= s and r.end < rd.start for r in ok_ops):
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
                    s.get("time", INF) - healed <= 10_000 * MS and not converged:
                converged = True
                counts["converged_after_ms"] = max(0, (s["time"] - healed) // MS)
    if conv and not converged:
        errors.append({"kind": "not-converged", "within_ms": 10000,
                       "last_sample": (conv[-1].get("value") or {}).get("samples", [None])[-1]})
    for ev in scans:
        probs = (ev.get("value") or {}).get("problems") or []
        counts["log_problems"] += len(probs)
        for p in probs[:MAX_ERRORS]:
            errors.append({"kind": "log", "problem": p})
    valid = bool(conv) and bool(scans) and converged and counts["diverged"] == 0 and \
        counts["log_problems"] == 0
    return result(valid, counts, errors)


# ---------------------------------------------------------------- driver


def check_format(problems):
    return result(not problems, {"problems": len(problems)}, [{"problem": p} for p in problems])


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
    }
    out = {}
    for name, fn in checks.items():
        if want is None or name in want:
            out[name] = fn()
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
