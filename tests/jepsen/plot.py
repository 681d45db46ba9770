#!/usr/bin/env python3
"""Draws a PNG timeline of a history with gnuplot: one lane per client process (ok / fail / info
in different colours), latency below, nemesis windows shaded.

It only draws; it judges nothing (checker.py does) and needs the `gnuplot` program (gnuplot-nox).
"""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from history import INF, pair_ops, read_history  # noqa: E402

COLOURS = {"ok": "#1a9850", "fail": "#d73027", "info": "#f39c12"}
OPENERS = {"kill": "restart", "pause": "resume"}


class PlotError(Exception):
    pass


def nemesis_windows(events, t_end):
    """(start, end, label) windows: start-X..stop-X, kill..restart and pause..resume per node;
    other nemesis events are zero-width."""
    wins = []
    open_ = {}
    for ev in events:
        if ev.get("process") != "nemesis":
            continue
        f = str(ev.get("f"))
        v = ev.get("value")
        node = v.get("node") if isinstance(v, dict) else None
        if f.startswith("start-"):
            open_[(f[6:], None)] = (ev["time"], f[6:])
        elif f.startswith("stop-"):
            st = open_.pop((f[5:], None), None)
            if st:
                wins.append((st[0], ev["time"], st[1]))
        elif f in OPENERS:
            open_[(f, node)] = (ev["time"], "%s %s" % (f, node if node is not None else ""))
        elif f in OPENERS.values():
            opener = [k for k, v2 in OPENERS.items() if v2 == f][0]
            st = open_.pop((opener, node), None)
            if st:
                wins.append((st[0], ev["time"], st[1]))
        else:
            wins.append((ev["time"], ev["time"], f))
    for st in open_.values():
        wins.append((st[0], t_end, st[1]))
    return wins


def quote(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def build(events, png, data_path, title=None, width=1600):
    """Writes the data file and returns the gnuplot script text."""
    ops, _ = pair_ops(events)
    if not events:
        raise PlotError("empty history")
    t0 = min(ev["time"] for ev in events)
    t_end = max(ev["time"] for ev in events)
    sec = 1e9
    lanes = {}
    for op in ops:
        lanes.setdefault((str(op.workload), op.process), None)
    for i, k in enumerate(sorted(lanes)):
        lanes[k] = i
    blocks = {"ok": [], "fail": [], "info": []}
    lat = {"ok": [], "fail": [], "info": []}
    for op in ops:
        end = op.end
        if end == INF:
            end = events[op.end_index]["time"] if op.end_index is not None else t_end
        lane = lanes[(str(op.workload), op.process)]
        kind = op.type if op.type in blocks else "info"
        blocks[kind].append("%.6f %d %.6f" % ((op.start - t0) / sec, lane, (end - op.start) / sec))
        lat[kind].append("%.6f %.6f" % ((end - t0) / sec, max((end - op.start) / 1e6, 0.001)))
    with open(data_path, "w", encoding="utf-8") as f:
        for kind in ("ok", "fail", "info"):
            f.write("# %s\n" % kind)
            f.write("\n".join(blocks[kind] or ["NaN NaN NaN"]) + "\n\n\n")
        for kind in ("ok", "fail", "info"):
            f.write("# latency %s\n" % kind)
            f.write("\n".join(lat[kind] or ["NaN NaN"]) + "\n\n\n")
    xmax = max((t_end - t0) / sec, 1e-3)
    nlanes = max(len(lanes), 1)
    height = 300 + min(nlanes, 200) * 6 + 250
    s = []
    s.append("set terminal pngcairo size %d,%d font ',9'" % (width, height))
    s.append("set output %s" % quote(png))
    s.append("set multiplot layout 2,1 title %s" % quote(title or os.path.basename(png)))
    s.append("set xrange [0:%f]" % xmax)
    s.append("set grid xtics")
    s.append("set key outside right top")
    s.append("set lmargin 10")
    s.append("set rmargin 16")
    for i, (a, b, label) in enumerate(nemesis_windows(events, t_end)):
        xa, xb = (a - t0) / sec, (b - t0) / sec
        if xb - xa < xmax / 1000:
            xb = xa + xmax / 1000
        s.append("set object %d rect from %f, graph 0 to %f, graph 1 behind "
                 "fillcolor rgb '#9e9ac8' fillstyle transparent solid 0.25 noborder"
                 % (i + 1, xa, xb))
        s.append("set label %d %s at %f, graph 0.98 front font ',7' rotate by 90 right"
                 % (i + 1, quote(label), xa))
    s.append("set size 1,0.68")
    s.append("set origin 0,0.3")
    s.append("set ylabel 'process lane'")
    s.append("set yrange [-1:%d]" % nlanes)
    s.append("set format x ''")
    parts = []
    for i, kind in enumerate(("ok", "fail", "info")):
        parts.append("%s index %d using 1:2:3:(0) with vectors nohead lw 3 lc rgb '%s' title '%s'"
                     % (quote(data_path), i, COLOURS[kind], kind))
    s.append("plot " + ", ".join(parts))
    s.append("unset label")
    s.append("set size 1,0.3")
    s.append("set origin 0,0")
    s.append("set format x '%g'")
    s.append("set xlabel 'time since start (s)'")
    s.append("set ylabel 'latency (ms)'")
    s.append("set logscale y")
    s.append("set autoscale y")
    parts = []
    for i, kind in enumerate(("ok", "fail", "info")):
        parts.append("%s index %d using 1:2 with points pt 7 ps 0.3 lc rgb '%s' title '%s'"
                     % (quote(data_path), 3 + i, COLOURS[kind], kind))
    s.append("plot " + ", ".join(parts))
    s.append("unset multiplot")
    return "\n".join(s) + "\n"


def plot(events, png, title=None):
    gp = shutil.which("gnuplot")
    if gp is None:
        raise PlotError("gnuplot not found (apt-get install gnuplot-nox)")
    with tempfile.TemporaryDirectory(prefix="jepsen-plot-") as d:
        data = os.path.join(d, "ops.dat")
        script = os.path.join(d, "timeline.gp")
        with open(script, "w", encoding="utf-8") as f:
            f.write(build(events, os.path.abspath(png), data, title=title))
        p = subprocess.run([gp, script], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise PlotError("gnuplot failed: " + p.stderr.strip()[-2000:])
    return png


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 2):
        print("usage: plot.py history.jsonl [timeline.png]", file=sys.stderr)
        return 2
    hist = argv[0]
    png = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(hist) or ".",
                                                       "timeline.png")
    plot(read_history(hist), png, title=os.path.basename(os.path.dirname(os.path.abspath(hist))))
    print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
