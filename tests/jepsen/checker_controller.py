"""Checks of the controller workload (workload_controller.py; README.md "Workload controller"):
what the replicated controller table may never do, judged from every observation the history
holds of it - each node's /status table, the leader's 1004, 1003, 1002 and 1001 replies, and the
1008 notifications the brokers received. It judges the history only.

The facts they rest on (docs/controller.md §4): a group's state changes only by events in one
log; an election raises the master epoch and the SyncStateSet epoch and sets S = {master}; a
failed election raises the master epoch and clears the master; a SyncStateSet change raises the
SyncStateSet epoch. So along the log both epochs only grow, one master epoch names one outcome,
one SyncStateSet epoch names one set, and while a master exists it is the master (and master
epoch) of the event that made the current SyncStateSet epoch: re-electing one needs an
election, which raises the SyncStateSet epoch."""

from history import INF

MS = 1_000_000
MAX_ERRORS = 10
UNKNOWN = object()  # a master an observation does not tell (1003 omits a dead master)


def result(valid, counts, errors):
    return {"valid": valid, "counts": counts, "errors": errors[:MAX_ERRORS]}


class Obs:
    """One observation of a group's state. master: id, None (no master) or UNKNOWN; epoch and
    set_epoch may be None (not told); set is the SyncStateSet at set_epoch or None."""

    __slots__ = ("group", "start", "end", "epoch", "master", "set_epoch", "set", "src", "node")

    def __init__(self, group, start, end, src, node=None, epoch=None, master=UNKNOWN,
                 set_epoch=None, set_=None):
        self.group, self.start, self.end, self.src, self.node = group, start, end, src, node
        self.epoch, self.master, self.set_epoch = epoch, master, set_epoch
        self.set = None if set_ is None else tuple(sorted(set_))

    def full(self):
        return self.epoch is not None and self.master is not UNKNOWN and \
            self.set_epoch is not None

    def brief(self):
        return {"group": self.group, "src": self.src, "node": self.node, "epoch": self.epoch,
                "master": "?" if self.master is UNKNOWN else self.master,
                "set_epoch": self.set_epoch, "set": self.set, "start": self.start,
                "end": None if self.end == INF else self.end}


def ctl_ops(ops):
    return [o for o in ops if o.workload == "controller"]


def observations(ops, events):
    """Every observation of the controller table in the history."""
    out = []
    for o in ctl_ops(ops):
        r = o.result if isinstance(o.result, dict) else {}
        v = o.value if isinstance(o.value, dict) else {}
        g = v.get("group")
        if o.f == "ctl-status" and o.type == "ok":
            for name, st in (r.get("groups") or {}).items():
                out.append(Obs(name, o.start, o.end, "status", o.node, st.get("masterEpoch"),
                               st.get("master"), st.get("syncStateSetEpoch"), st.get("set")))
            continue
        if o.type != "ok" or g is None:
            continue
        code = r.get("code")
        if o.f == "replica-info" and code == 0:
            out.append(Obs(g, o.start, o.end, "1004", o.node, r.get("masterEpoch"),
                           r.get("masterBrokerId"), r.get("bodySyncStateSetEpoch"),
                           r.get("set")))
        elif o.f == "register" and code == 0:
            # the master only while it is alive; the body always
            if r.get("masterBrokerId") is not None:
                out.append(Obs(g, o.start, o.end, "1003", o.node, r.get("masterEpoch"),
                               r["masterBrokerId"], r.get("syncStateSetEpoch")))
            out.append(Obs(g, o.start, o.end, "1003-body", o.node, None, UNKNOWN,
                           r.get("bodySyncStateSetEpoch"), r.get("set")))
        elif o.f == "elect" and code in (0, 2011) and r.get("masterBrokerId") is not None:
            out.append(Obs(g, o.start, o.end, "1002-%d" % code, o.node, r.get("masterEpoch"),
                           r["masterBrokerId"], r.get("syncStateSetEpoch"), r.get("set")))
        elif o.f == "alter" and code == 0:
            # the set the alter made; its master epoch is what ctl-fencing checks
            out.append(Obs(g, o.start, o.end, "1001", o.node, None, UNKNOWN,
                           r.get("newSyncStateSetEpoch"), r.get("set")))
    for ev in events:
        if ev.get("f") == "ctl-notify" and isinstance(ev.get("value"), dict):
            v = ev["value"]
            if v.get("masterBrokerId") is not None and v.get("masterEpoch") is not None:
                # a real state (the leader's current table when it sent), but its body's
                # set is [master], not the current SyncStateSet: no set taken from it
                out.append(Obs(v.get("group"), ev["time"], ev["time"], "1008", None,
                               v["masterEpoch"], v["masterBrokerId"],
                               v.get("syncStateSetEpoch")))
    return [o for o in out if o.group is not None]


def by_group(obs):
    out = {}
    for o in obs:
        out.setdefault(o.group, []).append(o)
    return out


def set_at(obs):
    """{(group, set epoch): set} from every observation that tells a set."""
    out = {}
    for o in obs:
        if o.set_epoch is not None and o.set is not None:
            out.setdefault((o.group, o.set_epoch), o.set)
    return out


def masters_at_set_epoch(obs):
    """{(group, set epoch): {(master epoch, master)}} of states with a master."""
    out = {}
    for o in obs:
        if o.set_epoch is not None and o.epoch is not None and \
                o.master not in (None, UNKNOWN):
            out.setdefault((o.group, o.set_epoch), {}).setdefault((o.epoch, o.master), o)
    return out


# ------------------------------------------------------------------ ctl-epochs


def check_epochs(ops, events, cfg):
    """One outcome per master epoch, one set per SyncStateSet epoch, one master (and master
    epoch) per SyncStateSet epoch while a master exists, the master in its set, no two states
    whose epochs cross (master epoch up, set epoch down), and each node's table never going
    back between two of its reads."""
    obs = observations(ops, events)
    counts = {"observations": len(obs), "checked": 0, "two_masters_one_epoch": 0,
              "two_sets_one_epoch": 0, "two_masters_one_set_epoch": 0, "master_not_in_set": 0,
              "crossed": 0, "went_back": 0}
    errors = []
    outcome, sets = {}, {}
    for o in obs:
        if o.epoch is not None and o.master is not UNKNOWN:
            counts["checked"] += 1
            prev = outcome.setdefault((o.group, o.epoch), o)
            if prev.master != o.master:
                counts["two_masters_one_epoch"] += 1
                errors.append({"kind": "two-masters-one-epoch", "group": o.group,
                               "epoch": o.epoch, "seen": [prev.brief(), o.brief()]})
        if o.set_epoch is not None and o.set is not None:
            counts["checked"] += 1
            prev = sets.setdefault((o.group, o.set_epoch), o)
            if prev.set != o.set:
                counts["two_sets_one_epoch"] += 1
                errors.append({"kind": "two-sets-one-epoch", "group": o.group,
                               "set_epoch": o.set_epoch, "seen": [prev.brief(), o.brief()]})
        if o.set is not None and o.master not in (None, UNKNOWN) and o.master not in o.set:
            counts["master_not_in_set"] += 1
            errors.append({"kind": "master-not-in-set", "seen": o.brief()})
    for key, ms in masters_at_set_epoch(obs).items():
        if len(ms) > 1:
            counts["two_masters_one_set_epoch"] += 1
            errors.append({"kind": "two-masters-one-set-epoch", "group": key[0],
                           "set_epoch": key[1], "seen": [o.brief() for o in ms.values()]})
    for g, gobs in by_group(obs).items():
        pairs = sorted({(o.epoch, o.set_epoch) for o in gobs if o.full()})
        for i, (m1, s1) in enumerate(pairs):
            for m2, s2 in pairs[i + 1:]:
                if m2 > m1 and s2 < s1:
                    counts["crossed"] += 1
                    errors.append({"kind": "epochs-crossed", "group": g,
                                   "states": [[m1, s1], [m2, s2]]})
    per_node = {}
    for o in ctl_ops(ops):
        if o.f == "ctl-status" and o.type == "ok" and isinstance(o.result, dict):
            per_node.setdefault(o.node, []).append(o)
    for node, reads in per_node.items():
        reads.sort(key=lambda o: o.start)
        last = {}  # group -> (op, (master epoch, set epoch)) of the latest read that ended
        for o in reads:
            groups = o.result.get("groups") or {}
            for g, (p, mark) in list(last.items()):
                if p.end >= o.start:
                    continue
                st = groups.get(g)
                now = None if st is None else (st.get("masterEpoch"), st.get("syncStateSetEpoch"))
                if now is None or now[0] < mark[0] or now[1] < mark[1]:
                    counts["went_back"] += 1
                    errors.append({"kind": "went-back", "node": node, "group": g,
                                   "before": list(mark), "after": now,
                                   "times": [p.end, o.start]})
            for g, st in groups.items():
                last[g] = (o, (st.get("masterEpoch"), st.get("syncStateSetEpoch")))
    valid = not errors
    return result(valid, counts, errors)


# ------------------------------------------------------------------ ctl-elected-in-sync


def check_elected_in_sync(ops, events, cfg):
    """Every elected master (master epoch > 1: the first election takes the requester) was in
    the SyncStateSet just before its election, unless unclean election is on. The election at
    master epoch E made SyncStateSet epoch n0, the lowest set epoch seen with master epoch E and
    a master (a later one is an alter by that master, whose set holds it, so taking it is never
    wrong); the set before is the one seen at n0 - 1."""
    obs = observations(ops, events)
    counts = {"elections": 0, "checked": 0, "unobserved_before": 0, "outside_sync": 0}
    errors = []
    if cfg.get("ctl_unclean"):
        return result("unknown", counts, [{"kind": "unclean-election-on"}])
    sets = set_at(obs)
    first = {}  # (group, master epoch) -> obs with the lowest set epoch
    for o in obs:
        if o.epoch is None or o.set_epoch is None or o.master in (None, UNKNOWN):
            continue
        key = (o.group, o.epoch)
        if key not in first or o.set_epoch < first[key].set_epoch:
            first[key] = o
    for (g, epoch), o in sorted(first.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if epoch <= 1:
            continue
        counts["elections"] += 1
        before = sets.get((g, o.set_epoch - 1))
        if before is None:
            counts["unobserved_before"] += 1
            continue
        counts["checked"] += 1
        if o.master not in before:
            counts["outside_sync"] += 1
            errors.append({"kind": "elected-outside-sync-state-set", "group": g,
                           "master": o.master, "epoch": epoch, "set_epoch": o.set_epoch,
                           "set_before": list(before), "seen": o.brief()})
    return result(not errors, counts, errors)


# ------------------------------------------------------------------ ctl-fencing


def check_fencing(ops, events, cfg):
    """Every accepted SyncStateSet change (1001 code 0) came from the master of the current
    master epoch with the current set epoch: its reply's epoch is the request's + 1, and every
    state seen with the set epoch it replaced or the one it made, while a master existed, has
    the request's master and master epoch."""
    obs = observations(ops, events)
    at = masters_at_set_epoch(obs)
    counts = {"accepted": 0, "checked": 0, "unobserved": 0, "fenced_accepted": 0,
              "epoch_skipped": 0, "stale_sent": 0, "stale_refused": 0}
    errors = []
    for o in ctl_ops(ops):
        if o.f != "alter" or not isinstance(o.value, dict):
            continue
        v, r = o.value, o.result if isinstance(o.result, dict) else {}
        if v.get("stale"):
            counts["stale_sent"] += 1
            if o.type == "fail" and r.get("code") == 2000:
                counts["stale_refused"] += 1
        if o.type != "ok" or r.get("code") != 0:
            continue
        counts["accepted"] += 1
        g, m, e, s = v.get("group"), v.get("master"), v.get("masterEpoch"), \
            v.get("syncStateSetEpoch")
        n = r.get("newSyncStateSetEpoch")
        if n is None or s is None or n != s + 1:
            counts["epoch_skipped"] += 1
            errors.append({"kind": "alter-epoch-mismatch", "op": o.brief()})
            continue
        seen = [x for k in ((g, s), (g, n)) for x in at.get(k, {}).values()]
        if not seen:
            counts["unobserved"] += 1
            continue
        counts["checked"] += 1
        bad = [x.brief() for x in seen if (x.epoch, x.master) != (e, m)]
        if bad:
            counts["fenced_accepted"] += 1
            errors.append({"kind": "alter-accepted-from-fenced-master", "op": o.brief(),
                           "states": bad[:3]})
    return result(not errors, counts, errors)


# ------------------------------------------------------------------ ctl-failover


def extend_deadline(t, bound, windows):
    """t + bound, pushed to (window end + bound) for every fault window that overlaps the time
    until the deadline, repeatedly; INF when a window never closes."""
    deadline = t + bound
    changed = True
    while changed:
        changed = False
        for a, b in windows:
            if a <= deadline and b >= t and b + bound > deadline:
                deadline = b + bound
                changed = True
                if deadline == INF:
                    return INF
    return deadline


def lifecycles(events):
    """{(group, broker idx): [(time, "up"|"down", id)]} and {(group, broker idx): id}."""
    life, ids = {}, {}
    for ev in events:
        if ev.get("f") not in ("ctl-up", "ctl-down") or not isinstance(ev.get("value"), dict):
            continue
        v = ev["value"]
        key = (v.get("group"), v.get("broker"))
        life.setdefault(key, []).append((ev["time"], ev["f"][4:], v.get("id")))
        if v.get("id") is not None:
            ids[key] = v["id"]
    return life, ids


def up_through(life, key, t0, t1):
    """True when the broker was up at t0 and did not go down before t1."""
    state = "down"
    for t, what, _ in life.get(key, []):
        if t <= t0:
            state = what
        elif t <= t1 and what == "down":
            return False
    return state == "up"


def check_failover(ops, events, cfg, fault_windows):
    """After a master's broker died, a group with a SyncStateSet member that stayed up gets a
    new master (a higher master epoch with a master) within ctl_failover_bound_ms (scaled),
    counted from the death or from the end of the last fault window around it (the windows of
    checker.fault_windows, margins included), plus ctl_warm_ms when a node process started
    within that long before the deadline. A new master seen by the deadline meets it; else it
    is owed when a member of the latest set seen stayed up from the death to the deadline.
    Deaths whose deadline falls after the last
    observation, masters with an alter of unknown outcome, and groups without such a member
    are not judged."""
    from checker import node_starts, scale
    obs = observations(ops, events)
    bound = cfg.get("ctl_failover_bound_ms")
    counts = {"deaths": 0, "checked": 0, "not_master": 0, "no_live_sync_member": 0,
              "unknown_alter": 0, "past_end": 0, "met": 0, "late": 0}
    errors = []
    if not isinstance(bound, (int, float)):
        return result(False, counts, [{"kind": "missing", "what": "ctl_failover_bound_ms"}])
    bound = bound * MS * scale(cfg)
    warm = cfg.get("ctl_warm_ms", 0) * MS * scale(cfg)
    starts = sorted(t for ts in node_starts(events).values() for t in ts)
    life, ids = lifecycles(events)
    horizon = max([o.end for o in obs if o.src == "status" and o.end != INF] or [0])
    by_g = by_group(obs)
    alters = [o for o in ctl_ops(ops) if o.f == "alter"]
    for ev in events:
        if ev.get("f") != "ctl-down" or not isinstance(ev.get("value"), dict):
            continue
        v = ev["value"]
        g, bid, t = v.get("group"), v.get("id"), ev["time"]
        if bid is None:
            continue
        counts["deaths"] += 1
        before = [o for o in by_g.get(g, []) if o.end <= t and o.epoch is not None
                  and o.master is not UNKNOWN]
        if not before:
            counts["not_master"] += 1
            continue
        last = max(before, key=lambda o: o.epoch)
        if last.master != bid:
            counts["not_master"] += 1
            continue
        epoch = last.epoch
        if any(a.type == "info" and a.start <= t and (a.value or {}).get("group") == g and
               (a.value or {}).get("id") == bid and (a.value or {}).get("masterEpoch") == epoch
               for a in alters):
            counts["unknown_alter"] += 1
            continue
        # the set when it died: the one of the highest set epoch seen by then
        sets = [(o.set_epoch, o.set) for o in by_g.get(g, []) if o.end <= t and
                o.set is not None and o.set_epoch is not None]
        if not sets:
            counts["no_live_sync_member"] += 1
            continue
        s_die = max(sets)[1]
        deadline = extend_deadline(t, bound, fault_windows)
        if any(deadline - warm <= st <= deadline for st in starts):
            deadline += warm  # a leader that started lately judges masters only once warm
        if deadline == INF or deadline > horizon:
            counts["past_end"] += 1
            continue
        new = [o for o in by_g.get(g, []) if o.epoch is not None and o.epoch > epoch and
               o.master not in (None, UNKNOWN) and o.end <= deadline]
        if new:
            counts["checked"] += 1
            counts["met"] += 1
            continue
        # no new master by the deadline: owed only if a member of the set stayed up
        key_of = {i: k for k, i in ids.items() if k[0] == g}
        live = [m for m in s_die if m != bid and m in key_of and
                up_through(life, key_of[m], t, deadline)]
        if not live:
            counts["no_live_sync_member"] += 1
            continue
        counts["checked"] += 1
        counts["late"] += 1
        errors.append({"kind": "no-master-within-bound", "group": g, "dead": bid,
                       "epoch": epoch, "died": t, "deadline": deadline,
                       "bound_ms": bound / MS, "set": list(s_die), "live": live,
                       "next": [o.brief() for o in by_g.get(g, [])
                                if o.epoch is not None and o.epoch > epoch][:2]})
    return result(not errors, counts, errors)


# ------------------------------------------------------------------ ctl-tables


def check_tables(ops, events, cfg):
    """The final-tables round (runner.final_tables) holds every member's controller table
    (the replicated groups of /status, hashed) and every node's is the same, with groups."""
    counts = {"nodes": 0, "checked": 0, "groups": 0, "mismatched": 0}
    evs = [ev for ev in events if ev.get("f") == "final-tables"]
    if not evs:
        return result(False, counts, [{"kind": "missing", "what": "final-tables event"}])
    v = evs[-1].get("value") or {}
    nodes = v.get("nodes") or {}
    errors = []
    want = sorted(set(str(n) for n in cfg.get("nodes", [])) | set(nodes))
    vals = {}
    for n in want:
        t = nodes.get(n)
        if not isinstance(t, dict) or "ctl" not in t:
            errors.append({"kind": "no-controller-table", "node": n})
            continue
        vals[n] = (t["ctl"], t.get("ctl_groups"))
    counts["nodes"] = len(vals)
    counts["checked"] = len(vals)
    if len(set(vals.values())) > 1:
        counts["mismatched"] = 1
        errors.append({"kind": "controller-table-mismatch", "nodes": vals})
    counts["groups"] = max([g or 0 for _, g in vals.values()] or [0])
    if vals and counts["groups"] == 0:
        errors.append({"kind": "no-groups", "nodes": vals})
    if not v.get("stable"):
        errors.append({"kind": "not-stable", "applied_index": v.get("applied_index")})
    return result(not errors, counts, errors)


def checks(ops, events, cfg, fault_windows):
    """{name: thunk} of the controller checks, for checker.check_events."""
    return {
        "ctl-epochs": lambda: check_epochs(ops, events, cfg),
        "ctl-elected-in-sync": lambda: check_elected_in_sync(ops, events, cfg),
        "ctl-fencing": lambda: check_fencing(ops, events, cfg),
        "ctl-failover": lambda: check_failover(ops, events, cfg, fault_windows()),
        "ctl-tables": lambda: check_tables(ops, events, cfg),
    }
