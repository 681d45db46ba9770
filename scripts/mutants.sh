#!/usr/bin/env bash
# Builds raftns with each deliberately broken check (CMake RAFTNS_MUTANT for the security
# checks, RAFTNS_BREAK for the write path; see CMakeLists.txt) and requires the tests aimed at
# it to FAIL: a tier that passes against a mutant does not test what it claims. A catcher is a
# Python test (tests/*/test_*.py, run against the mutant's raftns) or a C test of the cluster
# tier (its executable's name, built in the mutant's tree: the simulated cluster, sim.h).
# A mutant is caught when each of its catchers fails. Exits non-zero if any mutant survives.
# Usage: scripts/mutants.sh [--build-only] [MUTANT...]   (default: all)
#   --build-only: only build each mutant's tree and its catchers' targets, run nothing
#   (scripts/test.sh does this in the background while other tests run).
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD
build_only=0
if [ "${1:-}" = --build-only ]; then
    build_only=1
    shift
fi
declare -A catcher=(
    [private-unsigned]=tests/security/test_private_codes.py
    [raft-unchecked]=tests/security/test_raft_port.py
    [acl-open]=tests/security/test_acl.py
    [no-reqid]="tests/process/test_exactly_once.py test_sim_write"
    # the write path over the simulated cluster (docs/testing.md)
    [forward-local]=test_sim_write
    [forward-once]=test_sim_write
    [no-dedup]=test_sim_write
    [ack-before-apply]=test_sim_write
    [read-no-wait]=test_sim_cluster
    [no-grace]=test_sim_cluster
    [stale-link]=test_sim_heartbeat_fresh
    [commit-own-stored]=test_sim_commit
    [batch-first-entry]=test_sim_batch
    [lead-after-disk-failure]=test_sim_disk_fault
    [notice-acked]=test_sim_write
    [append-drop-only]=test_node_guards
    # the route alone (a unit test)
    [memo-stale]=test_route_memo
)
declare -A kind=([no-reqid]=RAFTNS_BREAK [forward-local]=RAFTNS_BREAK
    [forward-once]=RAFTNS_BREAK [no-dedup]=RAFTNS_BREAK [ack-before-apply]=RAFTNS_BREAK
    [read-no-wait]=RAFTNS_BREAK [no-grace]=RAFTNS_BREAK [stale-link]=RAFTNS_BREAK
    [commit-own-stored]=RAFTNS_BREAK [batch-first-entry]=RAFTNS_BREAK
    [memo-stale]=RAFTNS_BREAK [lead-after-disk-failure]=RAFTNS_BREAK
    [notice-acked]=RAFTNS_BREAK [append-drop-only]=RAFTNS_BREAK)
mutants=("$@")
((${#mutants[@]})) || mutants=(private-unsigned raft-unchecked acl-open no-reqid forward-local
    forward-once no-dedup ack-before-apply read-no-wait no-grace stale-link commit-own-stored
    batch-first-entry memo-stale lead-after-disk-failure notice-acked append-drop-only)
survivors=()
for m in "${mutants[@]}"; do
    dir=$top/build-mutant-$m
    echo "== mutant $m: build"
    # Debug compiles fastest (19 s against 27 s for test_sim_write's tree here), and no catcher's
    # verdict depends on the optimiser: the sim tests run on virtual time, and the Python ones
    # also pass under ASan, which is slower still.
    cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -D"${kind[$m]:-RAFTNS_MUTANT}=$m" \
        >/dev/null 2>&1 || { echo "mutant $m: cmake failed"; exit 2; }
    if ((build_only)); then
        targets=()
        for c in ${catcher[$m]}; do
            if [[ $c == *.py ]]; then targets+=(raftns raftnsctl); else targets+=("$c"); fi
        done
        cmake --build "$dir" -j"$(nproc)" --target "${targets[@]}" >/dev/null ||
            { echo "mutant $m: build failed"; exit 2; }
        continue
    fi
    survived=0
    for c in ${catcher[$m]}; do
        log=$dir/catcher-$(basename "$c").log
        if [[ $c == *.py ]]; then
            cmake --build "$dir" -j"$(nproc)" --target raftns raftnsctl >/dev/null ||
                { echo "mutant $m: build failed"; exit 2; }
            echo "== mutant $m: $c must fail"
            RAFTNS_BIN=$dir/raftns RAFTNSCTL_BIN=$dir/raftnsctl PYTHONPATH=$top/tests/process \
                timeout 900 python3 "$c" >"$log" 2>&1
            rv=$?
            failed=$(grep -cE '^(FAIL|ERROR):' "$log")
        else
            cmake --build "$dir" -j"$(nproc)" --target "$c" >/dev/null ||
                { echo "mutant $m: build of $c failed"; exit 2; }
            echo "== mutant $m: $c must fail"
            timeout 900 "$dir/$c" >"$log" 2>&1
            rv=$?
            failed=$(grep -oE '^ *[0-9]+ FAILED TEST' "$log" | grep -oE '[0-9]+' || echo 0)
        fi
        if ((rv == 0)); then
            echo "mutant $m SURVIVED: $c passed against it (log: $log)"
            survived=1
        else
            echo "mutant $m caught by $c: $failed failing tests"
        fi
    done
    ((survived)) && survivors+=("$m")
done
if ((${#survivors[@]})); then
    echo "mutants: ${survivors[*]} survived"
    exit 1
fi
if ((build_only)); then
    echo "mutants: all ${#mutants[@]} built"
    exit 0
fi
echo "mutants: all ${#mutants[@]} caught"
