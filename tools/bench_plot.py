#!/usr/bin/env python3
"""bench_plot.py RESULTS.json OUTDIR: PNG plots of a scripts/bench.sh run with gnuplot
(Debian gnuplot-nox, pngcairo or png terminal): raftns vs redis throughput by connection
count, and latency percentiles per scenario. It only draws; it computes nothing new."""
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
set title 'Throughput vs connections (depth 1, median of repeats, same machine, same run)'
set logscale x 2
set xlabel 'connections'
set ylabel 'requests/s'
set key top left
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
set title 'Latency percentiles (median of repeats), microseconds, log scale'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel 'us'
set xtics rotate by -40 font ',8'
set key top left
set grid y
plot '%s' using 3:xtic(2) title 'p50', '' using 4 title 'p90', '' using 5 title 'p99', \\
     '' using 6 title 'p99.9'
""" % (term.split(" size")[0], os.path.join(out, "latency_percentiles.png"), dat2))
    print("plots in", out)


if __name__ == "__main__":
    main()
