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
            arg, res = v.get("value"), None
        elif op.f == "read":
            arg, res = None, read_result(op.result)
        else:
            arg, res = None, None
        info = op.type != "ok"
        out.append((op.f, arg, res, op.start, INF if info else op.end, info, op))
    return out


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

    state = initial
    linearized = 0
    depth = 0
    cache = set()
    calls = []
    steps = 0
    best = (-1, None, None)
    entry = head.next
    while True:
        if entry is None or (not entry.is_call and entry.info):
            # Only ops of unknown outcome are left: they may never take effect.
            return {"valid": True, "ops": n, "steps": steps}
        steps += 1
        if steps > max_steps:
            return {"valid": "unknown", "ops": n, "steps": steps,
                    "error": {"reason": "search cap of %d steps hit" % max_steps}}
        if entry.is_call:
            kind, arg, res = items[entry.op_id][0:3]
            legal, new_state = _step(state, kind, arg, res)
            if legal:
                lin2 = linearized | (1 << entry.op_id)
                k = (lin2, new_state)
                if k not in cache:
                    cache.add(k)
                    calls.append((entry, state))
                    state = new_state
                    linearized = lin2
                    depth += 1
                    lift(entry)
                    entry = head.next
                    continue
            entry = entry.next
            continue
        # A return whose op is not linearized yet: this branch is dead.
        if depth > best[0]:
            best = (depth, entry.op_id, state)
        if not calls:
            return {"valid": False, "ops": n, "steps": steps,
                    "error": _explain(items, best)}
        entry, state = calls.pop()
        depth -= 1
        linearized &= ~(1 << entry.op_id)
        unlift(entry)
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
