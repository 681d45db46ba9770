#!/usr/bin/env python3
"""bench_plot.py RESULTS.json OUTDIR: PNG plots of a scripts/bench.sh run with gnuplot
(Debian gnuplot-nox, pngcairo or png terminal): raftns vs redis throughput by connection
count, latency percentiles per scenario, and the failover timeline (acknowledged writes per
100 ms around a kill -9 of the leader, from the timeline trial of tools/failover_bench.py).
It only draws and bins; it computes nothing new."""
import json
import os
import subprocess
import sys


def terminal():
    out = subprocess.run(["gnuplot", "-e", "set terminal"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT).stdout.decode()
    return "pngcairo size 900,540" if "pngcairo" in out else "png size 900,540"


def gnuplot(script):
    subprocess.run(["gnuplot"], input=script.encode(), check=True)


def main():
    res = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    term = terminal()
    # Throughput vs connections (depth 1).
    rows = sorted((r for r in res["ratios"] if r["depth"] == 1 and r["raftns_rps"]),
                  key=lambda r: r["conns"])
    dat = os.path.join(out, "throughput.dat")
    with open(dat, "w") as f:
        for r in rows:
            f.write("%d %.1f %.1f\n" % (r["conns"], r["raftns_rps"], r["redis_rps"] or 0))
    if rows:
        gnuplot("""set terminal %s
set output '%s'
set termoption noenhanced
set title 'Throughput vs connections (depth 1, median of repeats, same machine, same run)'
set logscale x 2
set xlabel 'connections'
set ylabel 'requests/s'
set key top right
set grid
plot '%s' using 1:2 with linespoints title 'raftns GET_ROUTEINFO_BY_TOPIC', \\
     '%s' using 1:3 with linespoints title 'redis-server GET'
""" % (term, os.path.join(out, "throughput_vs_connections.png"), dat, dat))
    # Latency percentiles per scenario.
    dat2 = os.path.join(out, "latency.dat")
    runs = [r for r in res["runs"] if r.get("p50_us_median")]
    with open(dat2, "w") as f:
        for i, r in enumerate(runs):
            f.write('%d "%s" %.1f %.1f %.1f %.1f\n' % (
                i, r["scenario"], r["p50_us_median"], r["p90_us_median"],
                r["p99_us_median"], r["p999_us_median"]))
    if runs:
        gnuplot("""set terminal %s size 1100,600
set output '%s'
set rmargin 10
set title 'Latency percentiles (median of repeats), microseconds, log scale'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel 'us'
set xtics rotate by -40 font ',8'
set key top right
set grid y
plot '%s' using 3:xtic(2) title 'p50', '' using 4 title 'p90', '' using 5 title 'p99', \\
     '' using 6 title 'p99.9'
""" % (term.split(" size")[0], os.path.join(out, "latency_percentiles.png"), dat2))
    # Failover timeline: acknowledged writes per 100 ms bin, kill -9 at t = 0, one line per
    # timeline trial (log y: 1 forwarded write per bin and ~140 local ones both show).
    fo = res.get("failover") or {}
    trials = [t for t in (fo.get("timeline") or []) if t.get("acks_s")]
    if trials:
        plots = []
        for i, tl in enumerate(trials):
            bins = {}
            for t in tl["acks_s"]:
                k = int((t + 100.0) * 10) - 1000  # floor to 100 ms, negative times too
                bins[k] = bins.get(k, 0) + 1
            dat3 = os.path.join(out, "failover_timeline_%d.dat" % (i + 1))
            with open(dat3, "w") as f:
                for k in range(min(bins) - 1, max(bins) + 2):
                    f.write("%.2f %d\n" % (k / 10.0, bins.get(k, 0)))
            plots.append("'%s' using 1:($2>0?$2:0.5) with fsteps lw 2 title "
                         "'trial %d: first ack %.3f s after the kill'" %
                         (dat3, i + 1, tl["first_ack_s"]))
        gnuplot("""set terminal %s size 1000,520
set output '%s'
set termoption noenhanced
set title "Failover timeline: acknowledged REGISTER_BROKER writes per 100 ms, sent to one surviving follower\\n(3 nodes, one request outstanding, kill -9 of the leader at t = 0). Before the kill every write is forwarded\\nto the leader; after it, fast when the written-to survivor becomes leader, forwarded again when the other one does"
set xlabel 'seconds since kill -9 of the leader'
set ylabel 'acknowledged writes / 100 ms (log)'
set logscale y
set yrange [0.4:3000]
set ytics add ('0' 0.5)
set grid
set key top right
set arrow from 0, graph 0 to 0, graph 1 nohead lw 2 lc rgb 'red' front
set label 'kill -9' at 0.05, graph 0.6 tc rgb 'red' front
plot %s
""" % (term.split(" size")[0], os.path.join(out, "failover_timeline.png"),
               ", \\\n     ".join(plots)))
    print("plots in", out)


if __name__ == "__main__":
    main()
