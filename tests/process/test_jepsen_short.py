"""ctest entry for the fault suite's short schedule: 3 nodes, kill + partition + pause, about
three minutes (tests/jepsen/runner.py). Skips with exit 0 when not root or without `ip netns`;
fails when the checker rejects the history or the run breaks. Env: RAFTNS_BIN, JEPSEN_SEED."""

import os
import shutil
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "jepsen"))
import netns  # noqa: E402


SHORT = ("--time", "110", "--nemesis", "kill,partition,pause")


def main(args=SHORT):
    """args: the runner's schedule and workload arguments (test_jepsen_controller_short.py
    passes its own)."""
    why = netns.available()
    if why:
        print("skipped: needs root/netns (%s)" % why)
        return 0
    bin_path = os.environ.get("RAFTNS_BIN", os.path.join(HERE, "..", "..", "build", "raftns"))
    argv = [sys.executable, os.path.join(HERE, "..", "jepsen", "runner.py"), "--bin", bin_path,
            "--nodes", "3"] + list(args)
    if os.environ.get("JEPSEN_SEED"):
        argv += ["--seed", os.environ["JEPSEN_SEED"]]
    if shutil.which("setpriv"):  # the runner gets SIGTERM (and cleans up) if we are killed
        argv = ["setpriv", "--pdeathsig", "TERM", "--"] + argv
    child = subprocess.Popen(argv)

    def forward(signum, _frame):
        child.send_signal(signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    rc = child.wait()  # the runner removes its namespaces, rules, processes and data dirs
    if rc in (130, -signal.SIGINT, -signal.SIGTERM):
        print("FAIL: interrupted")
        return 1
    if rc == 77:
        print("skipped: needs root/netns")
        return 0
    if rc != 0:
        print("FAIL: fault suite exit %d (see the run dir above)" % rc)
        return 1
    print("ok: fault suite history valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
