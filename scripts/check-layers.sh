#!/usr/bin/env bash
# Checks the layer rules of docs/design.md §2 mechanically: which raftns headers and system libraries
# each layer may include, and that pure layers (base, codec, route, rsm, liveness) do no I/O, read no
# clock or randomness and never log. Exits non-zero listing every violation.
set -uo pipefail
cd "$(dirname "$0")/.."

violations=$(mktemp)
trap 'rm -f "$violations"' EXIT
# Reports run inside pipelines (subshells), so they go to a file counted at the end.
report() { echo "check-layers: $*" | tee -a "$violations"; }

base_h='err|alloc|buf|rcbuf|log|sorted|utf8|decimal|waits'
codec_h="$base_h|remoting|json|json_pull|sign|replay|codes"
route_h="$codec_h|route|kv|config|acl|cluster_config|crc32"
rsm_h="$route_h|command|fsm|wire|diverge|reqid|backup|controller"

# check_layer NAME ALLOWED_RAFTNS_HEADERS FORBIDDEN_SYSTEM_HEADERS FILES...
check_layer() {
    local name=$1 allowed=$2 forbidden=$3
    shift 3
    local f
    for f in "$@"; do
        [ -f "$f" ] || continue
        grep -nE '#include "raftns/' "$f" | grep -vE "#include \"raftns/($allowed)\.h\"" |
            while IFS= read -r line; do report "$name layer: $f:$line"; done
        local sys_forbidden=$forbidden
        [ "$f" = src/base/log.c ] && sys_forbidden=${forbidden//time\\.h/no-such-header}
        grep -nE "#include <($sys_forbidden)>" "$f" |
            while IFS= read -r line; do report "$name layer: $f:$line"; done
        # The log sink itself (src/base/log.c) is the one pure-layer file allowed a clock.
        [ "$f" = src/base/log.c ] && continue
        grep -nE '\b(clock_gettime|gettimeofday|time|rand|random|srand|getenv|fopen|open|socket|connect|printf|fprintf|syslog)[[:space:]]*\(' "$f" |
            grep -vE '^[0-9]+:[[:space:]]*(\*|//)' |
            while IFS= read -r line; do report "$name layer does I/O, clock or randomness: $f:$line"; done
        grep -nE '\bNS_LOG[[:space:]]*\(' "$f" |
            while IFS= read -r line; do report "$name layer logs: $f:$line"; done
    done
}

sys_io='uv\.h|raft\.h|raft/uv\.h|raft/fixture\.h|sys/socket\.h|netinet/in\.h|unistd\.h|fcntl\.h|time\.h'
check_layer base "$base_h" "$sys_io|cJSON\.h|zlib\.h" src/base/*.c include/raftns/{err,alloc,buf,rcbuf,utf8,decimal,waits}.h
check_layer codec "$codec_h" "$sys_io|zlib\.h" src/remoting/*.c src/json/*.c include/raftns/{remoting,json,json_pull,sign,replay,codes}.h
check_layer route "$route_h" "$sys_io" src/route/*.c include/raftns/{route,kv,config,acl,cluster_config,crc32}.h
check_layer rsm "$rsm_h" 'uv\.h|raft/uv\.h|raft/fixture\.h|sys/socket\.h|netinet/in\.h|unistd\.h|fcntl\.h|time\.h' \
    raft/command.c raft/fsm.c raft/state.c raft/snapshot.c raft/backup.c raft/wire_auth.c raft/wire_check.c \
    raft/diverge.c raft/reqid.c raft/controller.c raft/controller_live.c raft/controller_decide.c \
    include/raftns/{command,fsm,wire,diverge,reqid,backup,controller}.h
# The broker liveness table sits beside the layers over base only: time comes
# in as now_ms; the timers, reports and proposals stay in src/liveness/liveness.c.
check_layer liveness "$base_h|liveness_table" "$sys_io|cJSON\.h|zlib\.h" \
    src/liveness/liveness_table.c include/raftns/liveness_table.h
# The TLS engine sits beside the layers over base only: no loop, no sockets, no
# logging (OpenSSL reads its PEM files; the callers log what it reports).
check_layer tls "$base_h|tls" 'uv\.h|raft\.h|raft/uv\.h|sys/socket\.h|netinet/in\.h|time\.h' \
    src/tls/*.c include/raftns/tls.h

# The raft FSM adapter sits over the rsm and under the node, shared by the node and the
# raft_fixture tests: it logs and reads raft but includes nothing of the node or the server.
for f in raft/fsm_adapter.c include/raftns/fsm_adapter.h; do
    [ -f "$f" ] || continue
    grep -nE '#include "(raftns/[a-z_]+|[a-z_]+)\.h"' "$f" |
        grep -vE "#include \"raftns/($rsm_h|fsm_adapter)\.h\"" |
        while IFS= read -r line; do report "fsm adapter: $f:$line"; done
done
# One raft FSM: no other file (node or test) sets raft_fsm callbacks of its own.
grep -rnE '(\.|->)(apply|snapshot|restore)[[:space:]]*=' raft src tests tools --include='*.c' --include='*.h' |
    grep -v '^raft/fsm_adapter\.c:' |
    while IFS= read -r line; do report "a raft_fsm outside raft/fsm_adapter.c: $line"; done

# The rooms over the layers (docs/ARCHITECTURE.md). For each folder, the
# folders whose headers it may include; the graph itself must have no cycle.
# The observer sits over the server's public API (raftns/server.h), not over
# src/server. raftns/ headers are the public ones and are checked above.
declare -A room_may=(
    [net]=""
    [cluster]="net"
    [liveness]="cluster net"
    [controller]="cluster net"
    [gateway]="controller cluster liveness net"
    [server]="gateway controller liveness cluster net"
    [observe]="cluster net"
    [metrics]=""
)
rooms="${!room_may[*]}"
rooms_re=$(echo "$rooms" | tr ' ' '|')
# An edge "a b" per allowed include, for tsort: it names a loop on stderr
# (and GNU tsort exits non-zero) when the graph has one.
edges=$(for r in $rooms; do for d in ${room_may[$r]}; do echo "$r $d"; done; done)
if ! tsort_err=$(echo "$edges" | tsort 2>&1 >/dev/null) || [ -n "$tsort_err" ]; then
    report "the allowed room graph has a cycle: $tsort_err"
fi
for r in $rooms; do
    [ -d "src/$r" ] || continue
    allowed=" $r ${room_may[$r]} "
    grep -nE "^#include \"($rooms_re)/" src/"$r"/*.[ch] 2>/dev/null |
        while IFS= read -r line; do
            target=$(echo "$line" | sed -E 's/.*#include "([a-z_]+)\/.*/\1/')
            [[ $allowed == *" $target "* ]] ||
                report "room $r may not include $target: $line"
        done
done
# A room's private header (*_int.h) is included by its own folder only (tests
# may look inside the room they test).
grep -rnE '^#include "[a-z_]+/[a-z_]+_int\.h"' src tools raft --include='*.c' --include='*.h' |
    while IFS= read -r line; do
        file=${line%%:*}
        folder=$(basename "$(dirname "$file")")
        target=$(echo "$line" | sed -E 's/.*#include "([a-z_]+)\/.*/\1/')
        [ "$folder" = "$target" ] ||
            report "a private header of another room: $line"
    done
# The composition root's struct is nobody else's.
grep -rn '#include "server/' src --include='*.c' --include='*.h' | grep -v '^src/server/' |
    while IFS= read -r line; do report "only src/server includes server/: $line"; done
# Rooms below the composition root call none of its functions, and only the
# observer and main.c see the observer's API.
grep -nE '\bns_server_[a-z_]*\(' src/{net,cluster,liveness,controller,gateway,metrics}/*.[ch] raft/node/*.[ch] 2>/dev/null |
    grep -vE '^[^:]+:[0-9]+:[[:space:]]*(\*|//)' |
    while IFS= read -r line; do report "a room calls up into the server: $line"; done
grep -rn '#include "raftns/observe.h"' src raft --include='*.c' --include='*.h' |
    grep -vE '^(src/observe/|src/main\.c:)' |
    while IFS= read -r line; do report "the observer's API below the observer: $line"; done
# The process counters are a sink: they include no room.
grep -nE "^#include \"($rooms_re)/" src/metrics/*.c include/raftns/metrics.h 2>/dev/null |
    while IFS= read -r line; do report "the counters include a room: $line"; done
# The raft node's I/O (raft/node) includes no room of src/.
grep -nE "^#include \"($rooms_re)/" raft/node/*.[ch] 2>/dev/null |
    while IFS= read -r line; do report "the node includes a room: $line"; done

# The transport (src/net) knows no handler: it reports requests and closes
# through the hooks the composition root sets, and calls nothing above it.
net_files=(src/net/*.c src/net/*.h)
grep -nE '\bns_(dispatch|handle|cluster|liveness|pending|held_read|propose|acl_gate|observe|checkpoint|verdict|recovery|integrity|gateway|reply)_?[a-z_]*\(' \
    "${net_files[@]}" |
    while IFS= read -r line; do report "transport calls a room above it: $line"; done

# Lower layers never include the server or node headers.
grep -nE '#include "raftns/(server|node)\.h"' src/base/*.c src/remoting/*.c src/json/*.c src/route/*.c src/liveness/liveness_table.c \
    raft/command.c raft/fsm.c raft/state.c raft/snapshot.c raft/wire_auth.c raft/wire_check.c raft/diverge.c \
    raft/controller.c raft/controller_live.c raft/controller_decide.c 2>/dev/null |
    while IFS= read -r line; do report "pure layer includes the server: $line"; done

# Every file and raftns name that docs/ and the comments cite exists.
python3 scripts/check-names.py |
    while IFS= read -r line; do report "${line#check-names: }"; done

if [ -s "$violations" ]; then
    exit 1
fi
echo "check-layers: ok"
