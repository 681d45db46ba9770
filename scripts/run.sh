#!/usr/bin/env bash
# Installs what is missing, builds raftns and starts the embedded default: a one-node cluster
# on 127.0.0.1 (client port 9876, raft 9886, http 9896, data in ./raftns-data/1) in the
# foreground. Ctrl-C stops it cleanly. Extra arguments go to raftns.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target raftns raftnsctl
cat <<MSG
raftns: starting one node on 127.0.0.1:9876 (data in ./raftns-data/1)
  brokers:   namesrvAddr=127.0.0.1:9876   (broker.conf)
  clients:   export NAMESRV_ADDR=127.0.0.1:9876
  inspect:   build/raftnsctl -n 127.0.0.1:9876 clusters
MSG
exec build/raftns "$@"
