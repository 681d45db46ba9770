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

base_h='err|alloc|buf|log|sorted|utf8|decimal|waits'
codec_h="$base_h|remoting|json|json_pull|sign|replay|codes"
route_h="$codec_h|route|kv|config|acl|cluster_config"
rsm_h="$route_h|command|fsm|wire|diverge|reqid|controller"

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
check_layer base "$base_h" "$sys_io|cJSON\.h|zlib\.h" src/base/*.c include/raftns/{err,alloc,buf,utf8,decimal,waits}.h
check_layer codec "$codec_h" "$sys_io|zlib\.h" src/remoting/*.c src/json/*.c include/raftns/{remoting,json,json_pull,sign,replay,codes}.h
check_layer route "$route_h" "$sys_io" src/route/*.c include/raftns/{route,kv,config,acl,cluster_config}.h
check_layer rsm "$rsm_h" 'uv\.h|raft/uv\.h|raft/fixture\.h|sys/socket\.h|netinet/in\.h|unistd\.h|fcntl\.h|time\.h' \
    raft/command.c raft/fsm.c raft/state.c raft/snapshot.c raft/wire_auth.c raft/wire_check.c \
    raft/diverge.c raft/reqid.c raft/controller.c raft/controller_live.c raft/controller_decide.c \
    include/raftns/{command,fsm,wire,diverge,reqid,controller}.h
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

# The transport room of src/server (docs/ARCHITECTURE.md) knows no handler: it reports
# requests and closes through the hooks server.c sets, and calls nothing of the rooms above.
net_files=(src/net/*.c src/net/*.h)
grep -nE '#include "(gateway|cluster|liveness|observe)/' "${net_files[@]}" |
    while IFS= read -r line; do report "transport includes a room above it: $line"; done
grep -nE '\bns_(dispatch|handle|cluster|liveness|pending|held_read|propose|acl_gate|observe|checkpoint|verdict|recovery)_?[a-z_]*\(' \
    "${net_files[@]}" |
    while IFS= read -r line; do report "transport calls a room above it: $line"; done

# Lower layers never include the server or node headers.
grep -nE '#include "raftns/(server|node)\.h"' src/base/*.c src/remoting/*.c src/json/*.c src/route/*.c src/liveness/*.c \
    raft/command.c raft/fsm.c raft/state.c raft/snapshot.c raft/wire_auth.c raft/wire_check.c raft/diverge.c \
    raft/controller.c raft/controller_live.c raft/controller_decide.c 2>/dev/null |
    while IFS= read -r line; do report "pure layer includes the server: $line"; done

if [ -s "$violations" ]; then
    exit 1
fi
echo "check-layers: ok"
