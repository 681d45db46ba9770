"""Reading and writing history.jsonl (format in README.md) and pairing invokes with completions.

It knows the event format only; it does not judge any history (checker.py does).
"""

import json
import threading
import time

CLIENT_TYPES = ("invoke", "ok", "fail", "info")
INF = float("inf")


class HistoryError(Exception):
    pass


class HistoryWriter:
    """Appends events to history.jsonl, one flushed line each; safe to share between threads."""

    def __init__(self, path):
        self._f = open(path, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, event):
        ev = dict(event)
        if "time" not in ev:
            ev["time"] = time.monotonic_ns()
        line = json.dumps(ev, sort_keys=True, separators=(",", ":"))
        with self._lock:
            self._f.write(line + "\n")
            self._f.flush()
        return ev

    def close(self):
        with self._lock:
            self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def parse_lines(lines):
    """Returns the list of events; raises HistoryError with the line number on bad input."""
    events = []
    for no, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            ev = json.loads(line)
        except ValueError as e:
            raise HistoryError("line %d: not JSON: %s" % (no, e)) from None
        if not isinstance(ev, dict):
            raise HistoryError("line %d: not a JSON object" % no)
        if ev.get("type") not in CLIENT_TYPES:
            raise HistoryError("line %d: bad type %r" % (no, ev.get("type")))
        if not isinstance(ev.get("time"), (int, float)):
            raise HistoryError("line %d: missing numeric time" % no)
        if "process" not in ev or "f" not in ev:
            raise HistoryError("line %d: missing process or f" % no)
        ev["index"] = len(events)
        events.append(ev)
    return events


def read_history(path):
    with open(path, encoding="utf-8") as f:
        return parse_lines(f)


def write_history(path, events):
    with open(path, "w", encoding="utf-8") as f:
        for ev in events:
            ev = {k: v for k, v in ev.items() if k != "index"}
            f.write(json.dumps(ev, sort_keys=True, separators=(",", ":")) + "\n")


def is_client(ev):
    return isinstance(ev.get("process"), int) and not isinstance(ev.get("process"), bool)


class Op:
    """One client operation: invoke plus completion (type 'info' and end=INF when unknown)."""

    __slots__ = ("process", "f", "workload", "node", "value", "result", "type", "start", "end",
                 "index", "end_index", "error", "served_by")

    def __init__(self, inv):
        self.process = inv["process"]
        self.f = inv["f"]
        self.workload = inv.get("workload")
        self.node = inv.get("node")
        self.value = inv.get("value")
        self.result = None
        self.type = "info"
        self.start = inv["time"]
        self.end = INF
        self.index = inv["index"]
        self.end_index = None
        self.error = None  # the completion's "error" text (fail/info)
        # the completion's "served_by": the node whose state answered a read the asked node
        # forwarded (raftnsServedBy); None = the asked node answered from its own state
        self.served_by = None

    def __repr__(self):
        return "Op(p=%r %s %s %r->%r %s [%s,%s] node=%r)" % (
            self.process, self.workload, self.f, self.value, self.result, self.type, self.start,
            self.end, self.node)

    def brief(self):
        out = {"process": self.process, "f": self.f, "type": self.type, "value": self.value,
               "result": self.result, "start": self.start,
               "end": None if self.end == INF else self.end, "node": self.node}
        if self.served_by is not None:
            out["served_by"] = self.served_by
        return out


def pair_ops(events):
    """Returns (ops, problems): client ops in invoke order, and format problems found.

    A completion closes the open invoke of its process. An info completion keeps end=INF
    (the op may take effect at any later time) but records where the client gave up.
    """
    ops = []
    open_by_proc = {}
    problems = []
    last_time = None
    for ev in events:
        if last_time is not None and ev["time"] < last_time:
            problems.append("event %d: time goes backwards" % ev["index"])
        last_time = ev["time"] if last_time is None else max(last_time, ev["time"])
        if not is_client(ev):
            continue
        p = ev["process"]
        if ev["type"] == "invoke":
            if p in open_by_proc:
                problems.append("event %d: process %r invokes with an op open" % (ev["index"], p))
            op = Op(ev)
            open_by_proc[p] = op
            ops.append(op)
            continue
        op = open_by_proc.pop(p, None)
        if op is None:
            problems.append("event %d: completion without invoke (process %r)" % (ev["index"], p))
            continue
        if op.f != ev["f"]:
            problems.append("event %d: completion f %r != invoke f %r" % (ev["index"], ev["f"], op.f))
        op.type = ev["type"]
        op.end_index = ev["index"]
        if ev["type"] == "info":
            op.end = INF
        else:
            op.end = ev["time"]
        op.result = ev.get("value")
        op.error = ev.get("error")
        op.served_by = ev.get("served_by")
        if op.node is None:
            op.node = ev.get("node")
    return ops, problems


def harness_events(events, f=None):
    out = [ev for ev in events if ev.get("process") in ("harness", "nemesis")]
    if f is not None:
        out = [ev for ev in out if ev.get("f") == f]
    return out


def config(events):
    cfg = {}
    for ev in harness_events(events, "config"):
        if isinstance(ev.get("value"), dict):
            cfg.update(ev["value"])
    return cfg


def giveup_time(events, op):
    """Time the client gave up on an info op (for plotting), or None."""
    if op.end_index is None:
        return None
    return events[op.end_index]["time"]
