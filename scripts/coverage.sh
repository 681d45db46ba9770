#!/usr/bin/env bash
# Line coverage per source folder from the unit and cluster tiers alone (no process, interop or
# fault tests): builds build-coverage with gcc --coverage, runs `ctest -L 'unit|cluster'`, and
# prints lines hit / lines found per folder from lcov's tracefile.
# Usage: scripts/coverage.sh [--html DIR]   (the tracefile stays in build-coverage/coverage.info)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
html=
if [ "${1:-}" = --html ]; then
    html=${2:?--html needs a directory}
fi
scripts/setup.sh --test >/dev/null
dir=$top/build-coverage
cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=gcc -DRAFTNS_COVERAGE=ON \
    >/dev/null
cmake --build "$dir" -j"$(nproc)" >/dev/null
lcov --quiet --zerocounters --directory "$dir"
(cd "$dir" && ctest -L 'unit|cluster' -j"$(nproc)" --output-on-failure >"$dir/ctest.log") ||
    { tail -40 "$dir/ctest.log"; echo "coverage: a test failed" >&2; exit 1; }
lcov --quiet --capture --directory "$dir" --output-file "$dir/all.info" 2>/dev/null
lcov --quiet --extract "$dir/all.info" "$top/src/*" "$top/raft/*" "$top/include/*" \
    --output-file "$dir/coverage.info" 2>/dev/null
python3 - "$top" "$dir/coverage.info" <<'PY'
import collections, os, sys
top, path = sys.argv[1], sys.argv[2]
found, hit = collections.Counter(), collections.Counter()
src = None
for line in open(path):
    if line.startswith("SF:"):
        src = os.path.relpath(line[3:].strip(), top)
    elif line.startswith("LF:"):
        found[os.path.dirname(src)] += int(line[3:])
    elif line.startswith("LH:"):
        hit[os.path.dirname(src)] += int(line[3:])
print("%-22s %8s %8s %7s" % ("folder", "lines", "hit", "cover"))
for d in sorted(found):
    print("%-22s %8d %8d %6.1f%%" % (d, found[d], hit[d], 100.0 * hit[d] / max(found[d], 1)))
tf, th = sum(found.values()), sum(hit.values())
print("%-22s %8d %8d %6.1f%%" % ("total", tf, th, 100.0 * th / max(tf, 1)))
PY
if [ -n "$html" ]; then
    genhtml --quiet --output-directory "$html" "$dir/coverage.info"
    echo "coverage: html in $html"
fi
