#!/usr/bin/env bash
# Checks the folder graph of docs/ARCHITECTURE.md on the built libraries: every
# raftns symbol a room's library uses (nm -u) is defined in that library, in a
# room below it, or in a layer below the rooms. An include check
# (check-layers.sh) does not see a call made through a declaration written by
# hand; this does. Usage: scripts/check-room-links.sh [BUILD_DIR]
set -uo pipefail
build=${1:-build}
lower="ns_base ns_version ns_codec ns_route ns_rsm ns_tls ns_fsm_adapter ns_liveness ns_metrics ns_node"
declare -A may=(
    [ns_node]=""
    [ns_metrics]=""
    [ns_net]=""
    [ns_cluster]="ns_net"
    [ns_liveness_policy]="ns_cluster ns_net"
    [ns_controller]="ns_cluster ns_net"
    [ns_gateway]="ns_controller ns_liveness_policy ns_cluster ns_net"
    [ns_server]="ns_gateway ns_controller ns_liveness_policy ns_cluster ns_net"
    [ns_observe]="ns_server ns_cluster ns_net"
)
bad=0
defined() { nm --defined-only -g "$build/lib$1.a" 2>/dev/null | awk 'NF == 3 {print $3}'; }
for lib in "${!may[@]}"; do
    [ -f "$build/lib$lib.a" ] || { echo "check-room-links: $build/lib$lib.a missing" >&2; bad=1; continue; }
    ok=$(for l in $lib ${may[$lib]} $lower; do defined "$l"; done | sort -u)
    # raftns symbols only: ns_* and NS_*; libc, libuv, raft, OpenSSL are not rooms.
    while IFS= read -r sym; do
        if ! grep -qxF "$sym" <<<"$ok"; then
            echo "check-room-links: $lib uses $sym, defined in no room below it"
            bad=1
        fi
    done < <(nm -u "$build/lib$lib.a" | awk '{print $NF}' | grep -E '^(ns|NS)_' | sort -u)
done
[ "$bad" = 0 ] && echo "check-room-links: ok"
exit "$bad"
