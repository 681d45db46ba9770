#!/usr/bin/env bash
# Installs what is missing, builds raftns twice (normal, and ASan+UBSan) and runs every ctest
# label in both builds, then the format and layer checks, every build type (the gcc Release
# build also runs its unit and cluster tiers) and a short libFuzzer run.
# Usage: scripts/test.sh [--under-load] [ctest -L regex]   (default: every label)
#   --under-load: every ctest run has an unrelated CPU hog keeping each core busy
#   (scripts/hog.sh), with RAFTNS_TEST_SCALE=2 unless set (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
under=()
if [ "${1:-}" = --under-load ]; then
    under=("$top/scripts/hog.sh")
    shift
fi
labels=${1:-.}
jobs=$(nproc)

scripts/setup.sh --test

echo "== format and layers"
mapfile -t c_files < <(git ls-files -- 'src/*.c' 'src/*.h' 'include/*.h' 'raft/*.c' 'tools/*.c' \
    'tests/*.c' 'tests/*.h' 'raft/*.h' 'tools/*.h')
clang-format --dry-run --Werror "${c_files[@]}"
scripts/check-layers.sh

if [ -f tests/interop/package-lock.json ]; then
    echo "== interop client (npm ci)"
    (cd tests/interop && npm ci --no-audit --no-fund --loglevel=error)
fi

run_build() {
    local dir=$1
    shift
    echo "== build $dir ($*)"
    cmake -S "$top" -B "$top/$dir" "$@" >/dev/null
    cmake --build "$top/$dir" -j"$jobs"
    echo "== tests in $dir${under[*]:+ (under load)}"
    (cd "$top/$dir" && ${under[@]+"${under[@]}"} ctest --output-on-failure -j"$jobs" -L "$labels")
}

run_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ "$labels" = . ] || [[ unit =~ $labels ]]; then
    echo "== valgrind over the unit tier"
    for t in $(cd build && ctest -N -L unit | sed -n 's/^ *Test *#[0-9]*: //p'); do
        valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
            "build/$t" >/dev/null || { echo "valgrind: $t failed"; exit 1; }
    done
fi
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_build build-asan -DCMAKE_BUILD_TYPE=Debug -DRAFTNS_SANITIZE=ON

if [ "$labels" = . ]; then
    echo "== every build type compiles warning-free with GCC and Clang"
    for cc in gcc clang; do
        for type in Debug RelWithDebInfo Release MinSizeRel; do
            dir=$top/build-types/$cc-$type
            CC=$cc cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=$type >/dev/null
            cmake --build "$dir" -j"$jobs" >"$dir.log" 2>&1 ||
                { cat "$dir.log"; echo "build $cc $type failed"; exit 1; }
            echo "   $cc $type: ok"
        done
    done
    # Compiled is not tested: -O3 and NDEBUG change what the optimiser may assume. The pure
    # layers (unit) and the FSM on simulated clusters (cluster) run here, in seconds.
    echo "== unit and cluster tiers in the gcc Release build${under[*]:+ (under load)}"
    (cd "$top/build-types/gcc-Release" &&
        ${under[@]+"${under[@]}"} ctest --output-on-failure -j"$jobs" -L 'unit|cluster')
fi

if [ "$labels" = . ] || [[ security =~ $labels ]]; then
    echo "== mutants (each deliberately broken check must fail the test aimed at it)"
    scripts/mutants.sh
fi

# ---- fault-suite mutants (tests/jepsen, JEPSEN.md) -------------------------------------------
# A fast subset of scripts/jepsen.sh --mutants: each deliberately broken build must be judged
# INVALID on its short fixed schedule (about 80 s each). The clean short run is
# tests/process/test_jepsen_short.py in the process tier. Needs root and `ip netns`.
if [ "$labels" = . ] || [[ process =~ $labels ]]; then
    if [ "$(id -u)" = 0 ] && ip netns list >/dev/null 2>&1; then
        echo "== fault-suite mutants (a fast subset; each must be judged INVALID)"
        scripts/jepsen.sh --mutants crash-once,ack-before-apply,slow-expiry
    else
        echo "== fault-suite mutants: skipped (needs root and ip netns)"
    fi
fi
# ---- end of fault-suite mutants --------------------------------------------------------------

if [ "$labels" = . ] || [[ fuzz =~ $labels ]]; then
    echo "== fuzz (libFuzzer, short runs)"
    CC=clang cmake -S "$top" -B "$top/build-fuzz" -DCMAKE_BUILD_TYPE=Debug -DRAFTNS_FUZZ=ON >/dev/null
    cmake --build "$top/build-fuzz" -j"$jobs" --target $(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//')
    (cd "$top/build-fuzz" && ctest --output-on-failure -L fuzz)
fi
echo "== all tests passed"
