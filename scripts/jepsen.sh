#!/usr/bin/env bash
# Runs the raftns fault suite (tests/jepsen) as root: builds raftns if needed, then one seeded run
# in network namespaces; exit status is the checker's (0 valid, 1 invalid, 2 unknown).
# Usage: scripts/jepsen.sh [--nodes 3|5] [--time SECONDS] [--nemesis all|kill,pause,partition,member,clock,restart]
#                          [--seed N] [--bin PATH] [--broken [MUTANT]] [--workloads LIST] [--quiet S]
#        scripts/jepsen.sh --mutants [LIST] [--clean]
# --broken builds the mutant (default ack-before-commit) into build-break-<name> and runs it.
# --mutants builds each mutant of LIST (comma list, default: all) and runs it on its short fixed
# schedule (MUTANT_PLAN below); each must be judged INVALID, else the exit status is 1. --clean
# also runs the real build on the same schedules, each of which must be VALID.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
nodes=3 time=120 nemesis=all seed="" bin="" broken="" mutants="" clean=0 extra=()
# name -> "seed nemesis seconds nodes [workloads]": the seed's schedule exercises what the mutant breaks
# (kills for restarts and leader changes, pauses and partitions for lost reports); every run uses
# the same 10 s quiet period. no-grace runs on 5 nodes: with 3, the one follower left after a
# leader fault reports everything the new leader lacks before its first expiry, so only with
# several followers does a new leader without grace expire brokers it has not heard of yet.
# stale-reads runs the restart-isolated fault only: a node restarted next to a reachable leader
# catches up before its first read (about 120 ms), so only a restart cut off from the leader
# leaves it behind while reads reach it (JEPSEN.md). The controller mutants run the controller
# workload only (tests/jepsen/workload_controller.py), 60 s so that masters die and are replaced
# several times per group.
declare -A MUTANT_PLAN=(
    [ack-before-commit]="2 kill,partition,pause 40 3"
    [ack-before-apply]="2 kill,partition,pause 40 3"
    [ignore-reports]="6 kill,partition,pause 40 3"
    [crash-once]="2 kill,partition,pause 40 3"
    [slow-expiry]="2 kill,partition,pause 40 3"
    [apply-twice]="2 kill,partition,pause 40 3"
    [no-grace]="1 kill,partition,pause 40 5"
    [stale-reads]="2 restart 40 3"
    [elect-no-sync]="3 kill,partition,pause 60 3 controller"
    [fence-wrong-epoch]="3 kill,partition,pause 60 3 controller"
    [no-heartbeat-timeout]="3 kill,partition,pause 60 3 controller"
)
ALL_MUTANTS=ack-before-commit,ack-before-apply,ignore-reports,crash-once,slow-expiry,apply-twice,no-grace,stale-reads,elect-no-sync,fence-wrong-epoch,no-heartbeat-timeout
while [ $# -gt 0 ]; do
    case $1 in
        --nodes) nodes=$2; shift 2 ;;
        --time) time=$2; shift 2 ;;
        --nemesis) nemesis=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --broken)
            if [ $# -gt 1 ] && [ "${2#--}" = "$2" ]; then broken=$2; shift 2
            else broken=ack-before-commit; shift; fi ;;
        --mutants)
            if [ $# -gt 1 ] && [ "${2#--}" = "$2" ]; then mutants=$2; shift 2
            else mutants=$ALL_MUTANTS; shift; fi ;;
        --clean) clean=1; shift ;;
        --workloads|--quiet|--warmup|--out|--allow-nemesis-failure) extra+=("$1" "$2"); shift 2 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "jepsen.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ "$(id -u)" != 0 ]; then
    echo "jepsen.sh: must run as root (network namespaces, iptables)" >&2
    exit 77
fi
build() {
    local dir=$1
    shift
    cmake -S "$top" -B "$top/$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null 2>&1
    cmake --build "$top/$dir" -j"$(nproc)" --target raftns raftnsctl >/dev/null
}
runner() {
    python3 "$top/tests/jepsen/runner.py" "$@"
}
if [ -n "$mutants" ]; then
    survivors=() failed_clean=() table=()
    [ "$clean" = 1 ] && build build-jepsen -DRAFTNS_BREAK=
    IFS=, read -r -a list <<<"$mutants"
    for m in "${list[@]}"; do
        plan=${MUTANT_PLAN[$m]:-"2 kill,partition,pause 40 3"}
        read -r mseed mnem mtime mnodes mwork <<<"$plan"
        args=(--nodes "$mnodes" --time "$mtime" --nemesis "$mnem" --seed "$mseed" --quiet 10)
        # the controller checks judge a failover up to ~27 s after the heal (bound, fault
        # margin, a restarted leader's warm-up), and brokers still die in its first 40 %:
        # a longer quiet period
        [ -n "${mwork:-}" ] && args+=(--workloads "$mwork" --quiet 35)
        echo "== mutant $m: build-break-$m, $mnodes nodes, seed $mseed, $mnem, ${mtime}s"
        build "build-break-$m" -DRAFTNS_BREAK="$m" || { echo "mutant $m: build failed"; exit 2; }
        log=$top/build-break-$m/jepsen.log
        rc=0
        runner --bin "$top/build-break-$m/raftns" "${args[@]}" "${extra[@]}" >"$log" 2>&1 || rc=$?
        failed=$(grep -E '^[a-z-]+ +(FAIL|UNKNOWN) ' "$log" | awk '{print $1}' | paste -sd, - || true)
        dir=$(sed -n 's/.*run dir //p' "$log" | tail -1 || true)
        if [ "$rc" = 0 ]; then
            echo "mutant $m SURVIVED: judged VALID (log $log)"
            survivors+=("$m")
        else
            echo "mutant $m caught (exit $rc): failed checks ${failed:-none} (log $log)"
        fi
        table+=("$m|$mnodes|$mseed|$mnem|${failed:-none}|$rc|$dir")
        if [ "$clean" = 1 ]; then
            clog=$top/build-jepsen/jepsen-$m.log
            rc=0
            runner --bin "$top/build-jepsen/raftns" "${args[@]}" "${extra[@]}" >"$clog" 2>&1 || rc=$?
            cfailed=$(grep -E '^[a-z-]+ +(FAIL|UNKNOWN) ' "$clog" | awk '{print $1}' | paste -sd, - || true)
            cdir=$(sed -n 's/.*run dir //p' "$clog" | tail -1 || true)
            if [ "$rc" != 0 ]; then
                echo "clean build on $m's schedule: NOT valid (exit $rc, ${cfailed}; log $clog)"
                failed_clean+=("$m")
            else
                echo "clean build on $m's schedule: VALID"
            fi
            table+=("(real build)|$mnodes|$mseed|$mnem|${cfailed:-none}|$rc|$cdir")
        fi
    done
    echo "mutant|nodes|seed|nemesis|failed checks|exit|run dir"
    printf '%s\n' "${table[@]}"
    if ((${#survivors[@]})) || ((${#failed_clean[@]})); then
        echo "mutants: survived: ${survivors[*]:-none}; real build not valid on: ${failed_clean[*]:-none}"
        exit 1
    fi
    echo "mutants: all ${#list[@]} judged INVALID"
    exit 0
fi
if [ -n "$broken" ]; then
    build "build-break-$broken" -DRAFTNS_BREAK="$broken"
    bin=$top/build-break-$broken/raftns
elif [ -z "$bin" ]; then
    build build-jepsen -DRAFTNS_BREAK=
    bin=$top/build-jepsen/raftns
fi
args=(--bin "$bin" --nodes "$nodes" --time "$time" --nemesis "$nemesis")
[ -n "$seed" ] && args+=(--seed "$seed")
exec python3 "$top/tests/jepsen/runner.py" "${args[@]}" "${extra[@]}"
