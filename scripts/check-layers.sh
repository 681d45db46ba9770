#!/usr/bin/env bash
# Checks the layer rules of docs/design.md §2 mechanically: which raftns headers and system libraries
# each layer may include, and that pure layers (base, codec, route, rsm) do no I/O, read no
# clock or randomness and never log. Exits non-zero listing every violation.
set -uo pipefail
cd "$(dirname "$0")/.."

violations=$(mktemp)
trap 'rm -f "$violations"' EXIT
# Reports run inside pipelines (subshells), so they go to a file counted at the end.
report() { echo "check-layers: $*" | tee -a "$violations"; }

base_h='err|alloc|buf|log|sorted|utf8'
codec_h="$base_h|remoting|json|sign|replay|codes"
route_h="$codec_h|route|kv|config|acl"
rsm_h="$route_h|command|fsm|wire|diverge|reqid"

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
check_layer base "$base_h" "$sys_io|cJSON\.h|zlib\.h" src/base/*.c include/raftns/{err,alloc,buf,utf8}.h
check_layer codec "$codec_h" "$sys_io|zlib\.h" src/remoting/*.c src/json/*.c include/raftns/{remoting,json,sign,replay,codes}.h
check_layer route "$route_h" "$sys_io" src/route/*.c include/raftns/{route,kv,config,acl}.h
check_layer rsm "$rsm_h" 'uv\.h|raft/uv\.h|raft/fixture\.h|sys/socket\.h|netinet/in\.h|unistd\.h|fcntl\.h|time\.h' \
    raft/command.c raft/fsm.c raft/snapshot.c raft/wire_auth.c raft/wire_check.c \
    raft/diverge.c raft/reqid.c include/raftns/{command,fsm,wire,diverge,reqid}.h
# The TLS engine sits beside the layers over base only: no loop, no sockets, no
# logging (OpenSSL reads its PEM files; the callers log what it reports).
check_layer tls "$base_h|tls" 'uv\.h|raft\.h|raft/uv\.h|sys/socket\.h|netinet/in\.h|time\.h' \
    src/tls/*.c include/raftns/tls.h

# Lower layers never include the server or node headers.
grep -nE '#include "raftns/(server|node)\.h"' src/base/*.c src/remoting/*.c src/json/*.c src/route/*.c \
    raft/command.c raft/fsm.c raft/snapshot.c raft/wire_auth.c raft/wire_check.c raft/diverge.c 2>/dev/null |
    while IFS= read -r line; do report "pure layer includes the server: $line"; done

if [ -s "$violations" ]; then
    exit 1
fi
echo "check-layers: ok"
