#!/usr/bin/env bash
# Builds raftns with each deliberately broken check (CMake RAFTNS_MUTANT for the security
# checks, RAFTNS_BREAK=no-reqid for exactly-once writes; see CMakeLists.txt) and requires the
# test aimed at it to FAIL: a tier that passes against a mutant does not test what it claims.
# Exits non-zero if any mutant survives.
# Usage: scripts/mutants.sh [MUTANT...]   (default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD
declare -A catcher=(
    [private-unsigned]=tests/security/test_private_codes.py
    [raft-unchecked]=tests/security/test_raft_port.py
    [acl-open]=tests/security/test_acl.py
    [no-reqid]=tests/process/test_exactly_once.py
)
declare -A kind=([no-reqid]=RAFTNS_BREAK)
mutants=("$@")
((${#mutants[@]})) || mutants=(private-unsigned raft-unchecked acl-open no-reqid)
survivors=()
for m in "${mutants[@]}"; do
    dir=$top/build-mutant-$m
    echo "== mutant $m: build"
    cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -D"${kind[$m]:-RAFTNS_MUTANT}=$m" \
        >/dev/null 2>&1 || { echo "mutant $m: cmake failed"; exit 2; }
    cmake --build "$dir" -j"$(nproc)" --target raftns raftnsctl >/dev/null ||
        { echo "mutant $m: build failed"; exit 2; }
    echo "== mutant $m: ${catcher[$m]} must fail"
    if RAFTNS_BIN=$dir/raftns RAFTNSCTL_BIN=$dir/raftnsctl PYTHONPATH=$top/tests/process \
        timeout 900 python3 "${catcher[$m]}" >"$dir/catcher.log" 2>&1; then
        echo "mutant $m SURVIVED: ${catcher[$m]} passed against it (log: $dir/catcher.log)"
        survivors+=("$m")
    else
        echo "mutant $m caught: $(grep -cE '^(FAIL|ERROR):' "$dir/catcher.log") failing tests"
    fi
done
if ((${#survivors[@]})); then
    echo "mutants: ${survivors[*]} survived"
    exit 1
fi
echo "mutants: all ${#mutants[@]} caught"
