"""Linearizability of the KV register workload, one key at a time (Wing-Gong search with Lowe's memo).

It checks a single register model (write / read / delete, initial null); it knows nothing about
brokers or routes, and it reads no files.
"""

from history import INF

DEFAULT_MAX_STEPS = 2_000_000


class _Entry:
    __slots__ = ("op_id", "is_call", "match", "prev", "next", "time", "info")

    def __init__(self, op_id, is_call, time, info):
        self.op_id = op_id
        self.is_call = is_call
        self.time = time
        self.info = info
        self.match = None
        self.prev = None
        self.next = None


def _step(state, kind, arg, result):
    """Register model: returns (legal, new_state)."""
    if kind == "write":
        return True, arg
    if kind == "delete":
        return True, None
    return result == state, state  # read


def read_result(result):
    if isinstance(result, dict):
        return result.get("value")
    return result


def op_key(op):
    v = op.value if isinstance(op.value, dict) else {}
    return v.get("key")


def _prepare(ops):
    """Turns ops of one key into (kind, arg, result, start, end, info, op) tuples, dropping what
    cannot constrain the search (fail ops, info reads)."""
    out = []
    for op in ops:
        if op.type == "fail":
            continue
        if op.f == "read" and op.type != "ok":
            continue
        if op.f not in ("write", "read", "delete"):
            continue
        v = op.value if isinstance(op.value, dict) else {}
        if op.f == "write":
            arg, res = _hashable(v.get("value")), None
        elif op.f == "read":
            arg, res = None, _hashable(read_result(op.result))
        else:
            arg, res = None, None
        info = op.type != "ok"
        out.append([op.f, arg, res, op.start, INF if info else op.end, info, op])
    return _bound_info_writes(out)


def _bound_info_writes(items):
    """Shrinks the search without changing the verdict, for writes of unknown outcome:
    - a value no ok read returned: dropping the write keeps any linearization valid (a register
      overwritten before anyone reads it), so the write is removed;
    - a value written by exactly one write and returned by some ok read: the write did take effect
      before the earliest such read ended, so it becomes a known op ending there."""
    writers = {}
    read_end = {}
    for it in items:
        if it[0] == "write":
            writers[_hashable(it[1])] = writers.get(_hashable(it[1]), 0) + 1
        elif it[0] == "read" and it[2] is not None:
            k = _hashable(it[2])
            read_end[k] = min(read_end.get(k, INF), it[4])
    out = []
    for it in items:
        if it[0] == "write" and it[5]:
            k = _hashable(it[1])
            if k not in read_end:
                continue
            if writers[k] == 1 and read_end[k] > it[3]:
                it = [it[0], it[1], it[2], it[3], read_end[k], False, it[6]]
        out.append(tuple(it))
    return out


def _hashable(v):
    if isinstance(v, (dict, list)):
        return repr(v)
    return v


def check_key(ops, max_steps=DEFAULT_MAX_STEPS, initial=None):
    """Returns {"valid": True|False|"unknown", "ops": n, "steps": n, "error": {...}?}."""
    items = _prepare(ops)
    n = len(items)
    if n == 0:
        return {"valid": True, "ops": 0, "steps": 0}
    entries = []
    for i, (_kind, _arg, _res, start, end, info, _op) in enumerate(items):
        call = _Entry(i, True, start, info)
        ret = _Entry(i, False, end, info)
        call.match = ret
        ret.match = call
        entries.append(call)
        entries.append(ret)
    # Calls sort before returns at equal times: equal stamps count as concurrent.
    entries.sort(key=lambda e: (e.time, 0 if e.is_call else 1, e.op_id))
    head = _Entry(-1, False, -INF, False)
    prev = head
    for e in entries:
        prev.next = e
        e.prev = prev
        prev = e

    def lift(e):
        e.prev.next = e.next
        if e.next is not None:
            e.next.prev = e.prev
        r = e.match
        r.prev.next = r.next
        if r.next is not None:
            r.next.prev = r.prev

    def unlift(e):
        r = e.match
        r.prev.next = r
        if r.next is not None:
            r.next.prev = r
        e.prev.next = e
        if e.next is not None:
            e.next.prev = e

    # need[v]: unlinearized reads returning v; makers[v]: unlinearized ops that set the state to v.
    need = {}
    makers = {}
    for kind, arg, res, *_ in items:
        if kind == "read":
            need[res] = need.get(res, 0) + 1
        else:
            v = arg if kind == "write" else None
            makers[v] = makers.get(v, 0) + 1

    def account(i, d):
        kind, arg, res = items[i][0:3]
        if kind == "read":
            need[res] += d
        else:
            makers[arg if kind == "write" else None] += d

    state = initial
    linearized = 0
    depth = 0
    cache = set()
    calls = []  # (entry, state before, forced)
    steps = 0
    best = (-1, None, None)
    entry = None
    fresh = True  # just moved to a new (linearized, state): linearize legal reads first
    while True:
        steps += 1
        if steps > max_steps:
            return {"valid": "unknown", "ops": n, "steps": steps,
                    "error": {"reason": "search cap of %d steps hit" % max_steps}}
        dead = False
        if fresh:
            fresh = False
            entry = head.next
            # A legal read is linearized greedily: if no completion exists with it here, none
            # exists with it later (reads do not change the state, and every op that must
            # precede it is already linearized), so it is never a choice point.
            e = head.next
            while e is not None and e.is_call:
                if items[e.op_id][0] == "read" and items[e.op_id][2] == state:
                    break
                e = e.next
            if e is not None and e.is_call:
                lin2 = linearized | (1 << e.op_id)
                if (lin2, state) in cache:
                    dead = True
                else:
                    cache.add((lin2, state))
                    calls.append((e, state, True))
                    linearized = lin2
                    depth += 1
                    account(e.op_id, -1)
                    lift(e)
                    fresh = True
                    continue
        if not dead:
            if entry is None or (not entry.is_call and entry.info):
                # Only ops of unknown outcome are left: they may never take effect.
                return {"valid": True, "ops": n, "steps": steps}
            if entry.is_call:
                kind, arg, res = items[entry.op_id][0:3]
                if kind != "read":
                    _legal, new_state = _step(state, kind, arg, res)
                    # Leaving a state some pending read needs, when nothing can recreate it,
                    # strands that read.
                    if new_state == state or need.get(state, 0) == 0 or \
                            makers.get(state, 0) > 0:
                        lin2 = linearized | (1 << entry.op_id)
                        k = (lin2, new_state)
                        if k not in cache:
                            cache.add(k)
                            calls.append((entry, state, False))
                            state = new_state
                            linearized = lin2
                            depth += 1
                            account(entry.op_id, -1)
                            lift(entry)
                            fresh = True
                            continue
                entry = entry.next
                continue
            # A return whose op is not linearized yet: this branch is dead.
            if depth > best[0]:
                best = (depth, entry.op_id, state)
        while True:
            if not calls:
                if best[1] is None:
                    best = (0, entry.op_id if entry is not None else 0, state)
                return {"valid": False, "ops": n, "steps": steps,
                        "error": _explain(items, best)}
            entry, state, forced = calls.pop()
            depth -= 1
            linearized &= ~(1 << entry.op_id)
            account(entry.op_id, +1)
            unlift(entry)
            if not forced:
                break
        entry = entry.next


def _explain(items, best):
    depth, op_id, state = best
    op = items[op_id][6]
    concurrent = [items[j][6].brief() for j in range(len(items))
                  if items[j][3] <= op.end and items[j][4] >= op.start and j != op_id][:6]
    return {"reason": "no linearization: op cannot be placed after %d linearized ops" % depth,
            "op": op.brief(), "state_before": state, "concurrent": concurrent}


def check(ops, max_steps=DEFAULT_MAX_STEPS):
    """Checks every key of the kv workload. Returns a check result dict."""
    by_key = {}
    for op in ops:
        if op.workload != "kv":
            continue
        by_key.setdefault(op_key(op), []).append(op)
    errors = []
    counts = {"keys": len(by_key), "ops": 0, "ok": 0, "fail": 0, "info": 0, "steps": 0,
              "invalid_keys": 0, "unknown_keys": 0, "checked": 0}
    verdict = True
    for key in sorted(by_key, key=repr):
        kops = by_key[key]
        for op in kops:
            counts["ops"] += 1
            counts[op.type] += 1
        r = check_key(kops, max_steps=max_steps)
        counts["steps"] += r["steps"]
        counts["checked"] += r["ops"]
        if r["valid"] is False:
            counts["invalid_keys"] += 1
            verdict = False
            errors.append(dict(key=key, **r["error"]))
        elif r["valid"] == "unknown":
            counts["unknown_keys"] += 1
            if verdict is True:
                verdict = "unknown"
            errors.append(dict(key=key, **r["error"]))
    return {"valid": verdict, "counts": counts, "errors": errors[:10]}
