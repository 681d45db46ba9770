"""ctest entry for the controller workload's short fault run: 3 nodes, kill + partition + pause,
40 s of faults and a 35 s quiet period, scaled (a failover is judged up to ~27 s after the heal),
the controller workload only (tests/jepsen/
workload_controller.py, checks in checker_controller.py), about 100 s (ASan: about 3.5 min). Skips with exit 0 when not
root or without `ip netns`; fails when the checker rejects the history. Env: RAFTNS_BIN,
JEPSEN_SEED."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_jepsen_short  # noqa: E402

# A failover is judged up to ~27 s (scaled) after the heal: the quiet period grows with the
# shared deadline scale (RAFTNS_TEST_SCALE, x3 for sanitizer builds), as the checker's bounds do.
SCALE = (float(os.environ.get("RAFTNS_TEST_SCALE") or 1) *
         (3.0 if os.environ.get("RAFTNS_SANITIZE", "").upper() in ("ON", "1", "TRUE", "YES")
          else 1.0))

if __name__ == "__main__":
    sys.exit(test_jepsen_short.main(("--time", "40", "--nemesis", "kill,partition,pause",
                                     "--quiet", "%d" % (35 * SCALE),
                                     "--workloads", "controller")))
