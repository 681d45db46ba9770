#!/usr/bin/env bash
# Installs what is missing, builds raftns and starts the local three-node cluster of
# cluster-configs/local-3.json (client ports 9876-9878, raft 9886-9888, http 9896-9898, data
# in ./raftns-data/<id>) in the foreground. Ctrl-C or SIGTERM stops all three cleanly.
# Extra arguments go to every raftns process (for example --log-level debug).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target raftns raftnsctl
CONFIG=cluster-configs/local-3.json
# The local files name "secretFile": ../raftns-data/local.secret. Made once, random, mode 0600.
SECRET_FILE=raftns-data/local.secret
if [ ! -s "$SECRET_FILE" ]; then
    mkdir -p raftns-data
    (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$SECRET_FILE")
    echo "raftns: generated the local cluster secret in $SECRET_FILE"
fi
pids=()
stop_all() {
    trap - INT TERM
    echo "raftns: stopping ${pids[*]}"
    for pid in "${pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    echo "raftns: all three nodes stopped"
    exit 0
}
trap stop_all INT TERM
for id in 1 2 3; do
    build/raftns --config "$CONFIG" --id "$id" --data-dir "./raftns-data/$id" "$@" &
    pids+=("$!")
done
cat <<MSG
raftns: three nodes started from $CONFIG (pids ${pids[*]}; data in ./raftns-data/<id>)
  brokers:   namesrvAddr=127.0.0.1:9876;127.0.0.1:9877;127.0.0.1:9878   (broker.conf)
  clients:   export NAMESRV_ADDR='127.0.0.1:9876;127.0.0.1:9877;127.0.0.1:9878'
  inspect:   build/raftnsctl -n 127.0.0.1:9876 clusters
             RAFTNS_SECRET=\$(cat $SECRET_FILE) build/raftnsctl -n 127.0.0.1:9877 member list
             curl -s 127.0.0.1:9896/status
  stop:      Ctrl-C (stops all three)
MSG
# Wait until a node exits on its own (or a signal arrives: the trap stops the others).
set +e
wait -n "${pids[@]}"
status=$?
echo "raftns: a node exited (status $status); stopping the others"
stop_all
