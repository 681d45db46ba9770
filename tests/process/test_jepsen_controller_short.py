"""ctest entry for the controller workload's short fault run: 3 nodes, kill + partition + pause,
40 s of faults and a 30 s quiet period (a failover is judged up to ~27 s after the heal),
the controller workload only (tests/jepsen/
workload_controller.py, checks in checker_controller.py), about 95 s. Skips with exit 0 when not
root or without `ip netns`; fails when the checker rejects the history. Env: RAFTNS_BIN,
JEPSEN_SEED."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_jepsen_short  # noqa: E402

if __name__ == "__main__":
    sys.exit(test_jepsen_short.main(("--time", "40", "--nemesis", "kill,partition,pause",
                                     "--quiet", "30", "--workloads", "controller")))
