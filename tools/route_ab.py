"""Route reads (105) on two one-node servers side by side: BASE_RAFTNS and RAFTNS_BIN, with
raftns-bench alternating between them, 3 runs of 4 s each (10 brokers x 100 topics, ~2 KB
replies); prints the median throughput and p99 of each. Extra arguments go to raftns-bench
(default: -c 16 -d 16). A redis-server on a free port runs redis-benchmark GET at the same
connections and depth in the same rounds (the baseline). Every process it starts is stopped."""

import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "process"))
import harness  # noqa: E402

BENCH = os.environ.get("RAFTNS_BENCH_BIN", os.path.join(ROOT, "build", "raftns-bench"))


def main():
    bins = {"base": os.environ["BASE_RAFTNS"],
            "this": os.environ.get("RAFTNS_BIN", os.path.join(ROOT, "build", "raftns"))}
    shape = sys.argv[1:] or ["-c", "16", "-d", "16"]
    res = {k: [] for k in bins}
    nodes = {}
    conns = shape[shape.index("-c") + 1] if "-c" in shape else "16"
    depth = shape[shape.index("-d") + 1] if "-d" in shape else "1"
    rport = harness.free_ports(1)[0]
    redis = subprocess.Popen(["redis-server", "--port", str(rport), "--save", "",
                              "--appendonly", "no", "--bind", "127.0.0.1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    red = []
    try:
        harness.wait_until(lambda: subprocess.run(
            ["redis-cli", "-p", str(rport), "set", "key:__rand_int__", "x"],
            capture_output=True).returncode == 0, 10, "redis up")
        for k, b in bins.items():
            harness.RAFTNS_BIN = b
            n = harness.Node(log_level="warn")
            n.start()
            nodes[k] = n
        for _ in range(3):
            for k, n in nodes.items():
                p = subprocess.run([BENCH, "-a", "127.0.0.1:%d" % n.client_port] + shape +
                                   ["--mix", "route=100", "--brokers", "10", "--topics", "100",
                                    "--topic-pool", "100", "--setup-conns", "1", "--duration",
                                    "4", "--json"], capture_output=True, text=True)
                r = json.loads(p.stdout.splitlines()[0])
                res[k].append((r["throughput"], r["latency"]["p99_us"]))
            out = subprocess.run(["redis-benchmark", "-p", str(rport), "-c", conns, "-P", depth,
                                  "-t", "get", "-n", "500000", "--csv"],
                                 capture_output=True, text=True).stdout
            for line in out.splitlines():
                cols = [c.strip('"') for c in line.split(",")]
                if cols and cols[0] == "GET":
                    red.append(float(cols[1]))
        for k in res:
            print(k, shape, "median %.0f req/s" % statistics.median(x[0] for x in res[k]),
                  "p99 %.0f us" % statistics.median(x[1] for x in res[k]), res[k])
        print("redis GET", shape, "median %.0f req/s" % statistics.median(red), red)
    finally:
        for n in nodes.values():
            n.cleanup(check=False)
        redis.terminate()
        redis.wait()


if __name__ == "__main__":
    main()
