#!/bin/sh
# RSS after every route was read, against topics (10 brokers, each topic on one broker) and
# against brokers (10,000 topics, each on every broker), for one or more builds; writes
# OUTDIR/memory_curves.dat and OUTDIR/memory_curves.png (gnuplot). One mem-scale.sh run each.
# usage: scripts/mem-curves.sh OUTDIR LABEL=BUILD_DIR [LABEL=BUILD_DIR...]
set -eu
OUT=$1; shift
mkdir -p "$OUT"
DAT="$OUT/memory_curves.dat"
: > "$DAT"
rss() { scripts/mem-scale.sh "$@" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["rss_after_reads_mib"])'; }
for spec in "$@"; do
    label=${spec%%=*}; build=${spec#*=}
    echo "# $label topics (10 brokers) rss_mib" >> "$DAT"
    for p in 1000 3000 10000 30000 100000; do
        echo "$p $(POOL=$p rss 10 $((p / 10)) "$build")" >> "$DAT"
    done
    printf '\n\n# %s brokers (10,000 topics each) rss_mib\n' "$label" >> "$DAT"
    for b in 10 30 100 300; do
        echo "$b $(rss $b 10000 "$build")" >> "$DAT"
    done
    printf '\n\n' >> "$DAT"
done
n=$#
plot_t=""; plot_b=""; i=0
for spec in "$@"; do
    label=${spec%%=*}
    plot_t="$plot_t${plot_t:+, }'$DAT' index $((2 * i)) with linespoints title '$label'"
    plot_b="$plot_b${plot_b:+, }'$DAT' index $((2 * i + 1)) with linespoints title '$label'"
    i=$((i + 1))
done
gnuplot <<GP
set terminal pngcairo size 1000,450
set output '$OUT/memory_curves.png'
set multiplot layout 1,2 title 'raftns RSS after every route was read (whole-body registrations)'
set logscale x
set xlabel 'topics (10 brokers, 1 broker per topic)'
set ylabel 'RSS MiB'
set key left top
plot $plot_t
set xlabel 'brokers (10,000 topics on every broker)'
plot $plot_b
unset multiplot
GP
echo "$DAT"
