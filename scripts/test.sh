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
# The test tiers mostly wait on real processes and deadlines (an old CI run: ~15% of the CPU
# while ctest ran), so ctest runs one more test than there are cores.
tjobs=${RAFTNS_CTEST_JOBS:-$((jobs + 1))}

# Per-phase wall time, so each CI log shows where the time goes ("== time: <phase> <s>s").
phase_name=
phase_t0=$SECONDS
phase() {
    [ -n "$phase_name" ] && echo "== time: $phase_name $((SECONDS - phase_t0))s"
    phase_name=$1
    phase_t0=$SECONDS
}
bg_pids=()
test_exit() {
    local rc=$?
    phase ""
    echo "== time: total ${SECONDS}s (exit $rc)"
    # Background compiles still running when a foreground phase failed: stop them (and the
    # cmake each one runs) by PID.
    for p in ${bg_pids[@]+"${bg_pids[@]}"}; do
        pkill -TERM -P "$p" 2>/dev/null || true
        kill -TERM "$p" 2>/dev/null || true
    done
}
trap test_exit EXIT

phase setup
scripts/setup.sh --test

phase format
echo "== format and layers"
mapfile -t c_files < <(git ls-files -- 'src/*.c' 'src/*.h' 'include/*.h' 'raft/*.c' 'tools/*.c' \
    'tests/*.c' 'tests/*.h' 'raft/*.h' 'tools/*.h')
clang-format --dry-run --Werror "${c_files[@]}"
scripts/check-layers.sh

if [ -f tests/interop/package-lock.json ]; then
    phase npm
    echo "== interop client (npm ci)"
    (cd tests/interop && npm ci --no-audit --no-fund --loglevel=error)
fi

configure_build() {
    local dir=$1
    shift
    cmake -S "$top" -B "$top/$dir" "$@" >/dev/null
}
run_tests() {
    local dir=$1
    shift
    echo "== tests in $dir${under[*]:+ (under load)}"
    (cd "$top/$dir" && ${under[@]+"${under[@]}"} ctest --output-on-failure -j"$tjobs" "$@")
}

# The compile-only work (the ASan build, every build type with both compilers, the fuzzers)
# runs in the background at low priority while the first test run waits on its processes:
# it takes the idle CPU, and the tests keep theirs. Each job logs to a file, shown on failure.
bg_wait() { # bg_wait NAME PID LOG: waits for one background job, fails the run with its log
    local rc=0
    wait "$2" || rc=$?
    cat "$3"
    ((rc == 0)) || { echo "background $1 failed (exit $rc)"; exit 1; }
}
asan_compile() {
    echo "== build build-asan (-DCMAKE_BUILD_TYPE=Debug -DRAFTNS_SANITIZE=ON, background)"
    configure_build build-asan -DCMAKE_BUILD_TYPE=Debug -DRAFTNS_SANITIZE=ON
    local t0=$SECONDS
    nice -n 10 cmake --build "$top/build-asan" -j"$jobs" >"$top/build-asan.log" 2>&1 ||
        { cat "$top/build-asan.log"; return 1; }
    echo "   build-asan compiled in $((SECONDS - t0))s"
}
fault_mutants=crash-once,ack-before-commit,slow-expiry
want_fault_mutants() {
    { [ "$labels" = . ] || [[ process =~ $labels ]]; } && [ "$(id -u)" = 0 ] &&
        ip netns list >/dev/null 2>&1
}
want_fuzz() { [ "$labels" = . ] || [[ fuzz =~ $labels ]]; }
# The compile-only work after the ASan build, in the order the foreground needs it, each part
# announced by a marker file in build-types/ (marker_wait): the fault-suite mutants and the
# fuzzers (first-built: the phase after the ASan tests uses them), the security mutants
# (mutants-built), gcc Release (release-built), then the rest of the build-type matrix, which
# compiles while the foreground runs the mutants and the Release tests.
types_compile() {
    local t0=$SECONDS cc type dir
    if want_fault_mutants; then
        echo "== build the fault-suite mutants (background)"
        for m in ${fault_mutants//,/ }; do # as scripts/jepsen.sh builds them
            configure_build "build-break-$m" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAFTNS_BREAK="$m"
            nice -n 19 cmake --build "$top/build-break-$m" -j"$jobs" --target raftns raftnsctl \
                >/dev/null || { echo "fault-suite mutant $m: build failed"; return 1; }
        done
    fi
    if want_fuzz; then
        echo "== build build-fuzz (clang, libFuzzer, background)"
        CC=clang cmake -S "$top" -B "$top/build-fuzz" -DCMAKE_BUILD_TYPE=Debug -DRAFTNS_FUZZ=ON \
            >/dev/null
        nice -n 19 cmake --build "$top/build-fuzz" -j"$jobs" \
            --target $(cd "$top/tests/fuzz" && ls fuzz_*.c | sed 's/\.c$//') \
            >"$top/build-fuzz.log" 2>&1 || { cat "$top/build-fuzz.log"; return 1; }
    fi
    touch "$top/build-types/first-built"
    echo "   fault-suite mutants and fuzzers compiled in $((SECONDS - t0))s"
    # The deliberately broken builds that the mutant phase runs; it then finds them built (the
    # same cmake arguments: nothing to rebuild).
    if [ "$labels" = . ] || [[ security =~ $labels ]]; then
        echo "== build the mutants (background)"
        nice -n 19 scripts/mutants.sh --build-only
        touch "$top/build-types/mutants-built"
    fi
    if [ "$labels" = . ]; then
        echo "== every build type compiles warning-free with GCC and Clang (background)"
        echo "   gcc RelWithDebInfo: the main build"
        # gcc Release first: the foreground's Release tests wait for it alone.
        for build in gcc-Release gcc-Debug gcc-MinSizeRel clang-Debug clang-RelWithDebInfo \
            clang-Release clang-MinSizeRel; do
            cc=${build%%-*}
            type=${build#*-}
            dir=$top/build-types/$build
            CC=$cc cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE="$type" >/dev/null
            nice -n 19 cmake --build "$dir" -j"$jobs" >"$dir.log" 2>&1 ||
                { cat "$dir.log"; echo "build $cc $type failed"; return 1; }
            echo "   $cc $type: ok"
            if [ "$build" = gcc-Release ]; then touch "$top/build-types/release-built"; fi
        done
    fi
    echo "   compiled in $((SECONDS - t0))s"
}
# Waits for the part of types_compile that the marker file build-types/$1 announces (or for
# the background job's failure).
marker_wait() {
    while [ ! -e "$top/build-types/$1" ]; do
        kill -0 "$types_pid" 2>/dev/null || bg_wait build-types "$types_pid" \
            "$top/build-types/bg-types.out"
        sleep 1
    done
}

valgrind_units() { # valgrind over the unit tier; a failure names the program
    echo "== valgrind over the unit tier (background)"
    local t0=$SECONDS
    renice -n 19 -p "$BASHPID" >/dev/null # and so every program it starts
    # One program per core (each is CPU-bound under valgrind).
    for t in $(cd "$top/build" && ctest -N -L unit | sed -n 's/^ *Test *#[0-9]*: //p'); do
        if [ -x "$top/build/$t" ]; then echo "$top/build/$t"; fi # check_room_links: a script
    done | xargs -P "$jobs" -I{} sh -c 'valgrind -q --error-exitcode=9 --leak-check=full \
        --errors-for-leak-kinds=definite "$1" >/dev/null || { echo "valgrind: $1 failed"; exit 255; }' \
        sh {}
    echo "   valgrind done in $((SECONDS - t0))s"
}

phase build
echo "== build build (gcc, -DCMAKE_BUILD_TYPE=RelWithDebInfo)"
CC=gcc configure_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$top/build" -j"$jobs"
mkdir -p "$top/build-types"
asan_compile >"$top/build-types/bg-asan.out" 2>&1 &
asan_pid=$!
bg_pids+=("$asan_pid")
types_pid=
if [ "$labels" = . ] || [[ fuzz =~ $labels ]] || [[ security =~ $labels ]] ||
    [[ process =~ $labels ]]; then
    rm -f "$top/build-types"/{first-built,mutants-built,release-built}
    types_compile >"$top/build-types/bg-types.out" 2>&1 &
    types_pid=$!
    bg_pids+=("$types_pid")
fi

phase tests-build
run_tests build -L "$labels"
phase wait-asan-build
bg_wait build-asan "$asan_pid" "$top/build-types/bg-asan.out"
phase tests-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_tests build-asan -L "$labels"

# The fault-suite mutants wait on their schedules, so the rest of the background compiling,
# valgrind over the unit tier and the fuzzers run beside them at the lowest priority: the
# nodes keep the CPU they ask for (the clean short run stays valid under a CPU hog at equal
# priority: docs/testing.md), and a fuzzer's run is fixed in wall time, so it only makes fewer
# attempts. Each fuzzer and each valgrind program is CPU-bound, so one per core.
if [ -n "$types_pid" ]; then
    phase wait-first-built
    marker_wait first-built
fi
valgrind_pid=
if [ "$labels" = . ] || [[ unit =~ $labels ]]; then
    valgrind_units >"$top/build-types/valgrind.out" 2>&1 &
    valgrind_pid=$!
    bg_pids+=("$valgrind_pid")
fi
fuzz_pid=
if want_fuzz; then
    echo "== fuzz (libFuzzer, short runs, background)"
    (cd "$top/build-fuzz" && nice -n 19 ctest --output-on-failure -j"$jobs" -L fuzz) \
        >"$top/build-types/fuzz.out" 2>&1 &
    fuzz_pid=$!
    bg_pids+=("$fuzz_pid")
fi

# ---- fault-suite mutants (tests/jepsen, JEPSEN.md) -------------------------------------------
# A fast subset of scripts/jepsen.sh --mutants: each deliberately broken build must be judged
# INVALID on its short fixed schedule (about 80 s each). The clean short run is
# tests/process/test_jepsen_short.py in the process tier. Needs root and `ip netns`.
if [ "$labels" = . ] || [[ process =~ $labels ]]; then
    if want_fault_mutants; then
        phase fault-mutants
        echo "== fault-suite mutants (a fast subset; each must be judged INVALID)"
        scripts/jepsen.sh --mutants "$fault_mutants"
    else
        echo "== fault-suite mutants: skipped (needs root and ip netns)"
    fi
fi
# ---- end of fault-suite mutants --------------------------------------------------------------

# The mutants and the Release tests run while the rest of the matrix compiles.
if [ "$labels" = . ] || [[ security =~ $labels ]]; then
    phase wait-mutants-built
    marker_wait mutants-built
    phase mutants
    echo "== mutants (each deliberately broken check must fail the test aimed at it)"
    scripts/mutants.sh
fi
if [ "$labels" = . ]; then
    # Compiled is not tested: -O3 and NDEBUG change what the optimiser may assume. The pure
    # layers (unit) and the FSM on simulated clusters (cluster) run here, in seconds.
    phase wait-release-built
    marker_wait release-built
    phase tests-release
    echo "== unit and cluster tiers in the gcc Release build${under[*]:+ (under load)}"
    run_tests build-types/gcc-Release -L 'unit|cluster'
fi
if [ -n "$types_pid" ]; then
    phase wait-build-types
    bg_wait build-types "$types_pid" "$top/build-types/bg-types.out"
fi
if [ -n "$valgrind_pid" ]; then
    phase wait-valgrind
    bg_wait valgrind "$valgrind_pid" "$top/build-types/valgrind.out"
fi
if [ -n "$fuzz_pid" ]; then
    phase wait-fuzz
    bg_wait fuzz "$fuzz_pid" "$top/build-types/fuzz.out"
fi

phase ""
echo "== all tests passed"
